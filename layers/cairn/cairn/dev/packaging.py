"""``sam package`` on the local endpoint: each code folder zipped into a bucket of the local S3.

:class:`ArtifactBucket` is the ``upload`` of :func:`cairn.bundle.templating.transform.packaged`: it
zips each distinct folder once (``__pycache__`` left out), puts it in the stack's artifact bucket and remembers which
folder each key holds, so the local runner runs a function's code from its folder.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path
from typing import Any

_SKIPPED = ("__pycache__", ".pyc")


class ArtifactBucket:
    """The stack's artifact bucket on the local S3, and the folder behind each key put in it."""

    def __init__(self, s3: Any, stack_name: str, region: str) -> None:
        self.s3 = s3
        self.name = f"{stack_name.lower()}-cairn-dev-artifacts"[:63].rstrip("-.")
        request: dict[str, Any] = {"Bucket": self.name}
        if region != "us-east-1":
            request["CreateBucketConfiguration"] = {"LocationConstraint": region}
        s3.create_bucket(**request)
        self.folders: dict[str, Path] = {}
        """Each key put, and the folder it zips."""

    def __call__(self, logical_id: str, folder: Path) -> str:
        """Upload ``folder`` zipped (once: functions sharing a folder share its key, as ``sam package``'s do);
        its ``s3://`` location."""
        key = next((key for key, uploaded in self.folders.items() if uploaded == folder), None)
        if key is None:
            body = _zipped(folder)
            key = f"{hashlib.sha256(body).hexdigest()[:32]}.zip"
            self.s3.put_object(Bucket=self.name, Key=key, Body=body)
            self.folders[key] = folder
        return f"s3://{self.name}/{key}"

    def folder(self, code: Any) -> Path | None:
        """The folder behind a function's ``Code`` (or a layer's ``Content``) location, None for another."""
        if not isinstance(code, dict):
            return None
        return self.folders.get(str(code.get("S3Key"))) if code.get("S3Bucket") == self.name else None


def _zipped(folder: Path) -> bytes:
    """The folder's files in a zip, paths relative to it (byte-identical for the same files)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not any(part.endswith(_SKIPPED) for part in path.parts):
                info = zipfile.ZipInfo(path.relative_to(folder).as_posix(), date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                archive.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()
