"""Where a document's text comes from: a small registry of readers keyed by URL scheme.

A source without a scheme (or with ``file://``) is a local file; ``s3://bucket/key``
is an S3 object. Another scheme is added with :func:`register_reader`.

A deployment reads ``s3://`` documents from one bucket, the one its
``DocumentsBucket`` parameter names (``DOCUMENTS_BUCKET``; the fetch function
may read that bucket's objects only). Deployed without one, it reads none;
run locally without one, any bucket the caller's credentials can read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cairn import PhaseError

Reader = Callable[[str], str]
"""Maps the part of a source after ``scheme://`` (or a whole local path) to the document's text."""

SAMPLES_DIR = Path(__file__).resolve().parent / "samples"
DOCUMENTS_BUCKET = "DOCUMENTS_BUCKET"
"""The environment variable naming the bucket ``s3://`` documents are read from."""
MAX_DOCUMENT_BYTES = 1_000_000
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<rest>.*)$")


class SourceError(PhaseError):
    """A document could not be read; retrying will not help."""


class TransientSourceError(PhaseError):
    """A document could not be read this time (throttling, a service fault); a retry may succeed."""


def resolve_local_path(location: str) -> Path:
    """An absolute path as is; a relative one inside the samples folder.

    In a deployed function (on Lambda) only the shipped samples can be read:
    a job's input must not reach the function's own files.
    """
    path = Path(location).expanduser()
    resolved = path if path.is_absolute() else SAMPLES_DIR / path
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME") and not resolved.resolve().is_relative_to(SAMPLES_DIR):
        raise SourceError(f'Document "{location}" is outside the shipped samples; use s3://bucket/key')
    return resolved


def read_local_file(location: str) -> str:
    """The UTF-8 text of a local file; a missing, unreadable or oversized file is a SourceError."""
    path = resolve_local_path(location)
    try:
        size = path.stat().st_size
        if path.is_dir():
            raise SourceError(f'Document "{location}" is a directory ({path}), not a file')
        if size > MAX_DOCUMENT_BYTES:
            raise SourceError(f'Document "{location}" is {size} bytes; the limit is {MAX_DOCUMENT_BYTES}')
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise SourceError(f'Document "{location}" not found (looked for {path.resolve()})') from exc
    except PermissionError as exc:
        raise SourceError(f'Document "{location}" cannot be read: permission denied ({path})') from exc
    except UnicodeDecodeError as exc:
        raise SourceError(f'Document "{location}" is not UTF-8 text ({path})') from exc


def check_documents_bucket(bucket: str, location: str) -> None:
    """A SourceError unless this deployment may read documents from ``bucket``."""
    allowed = os.environ.get(DOCUMENTS_BUCKET) or None
    if allowed is None and os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        raise SourceError(
            f'Document "s3://{location}" cannot be read: this deployment reads no s3:// documents '
            "(deploy it with the DocumentsBucket parameter)"
        )
    if allowed is not None and bucket != allowed:
        raise SourceError(
            f'Document "s3://{location}" is in bucket "{bucket}": this deployment reads s3:// documents '
            f'from bucket "{allowed}" only (its DocumentsBucket parameter)'
        )


def read_s3_object(location: str, *, client: Any = None) -> str:
    """The UTF-8 text of ``bucket/key`` in S3; a missing, oversized or binary object is a SourceError."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, key = location.partition("/")
    if not bucket or not key:
        raise SourceError(f'S3 source "s3://{location}" needs a bucket and a key')
    check_documents_bucket(bucket, location)
    s3 = client or boto3.client("s3")
    try:
        head = s3.head_object(Bucket=bucket, Key=key)
        if head["ContentLength"] > MAX_DOCUMENT_BYTES:
            size = head["ContentLength"]
            raise SourceError(f'Document "s3://{location}" is {size} bytes; the limit is {MAX_DOCUMENT_BYTES}')
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        return body.decode("utf-8")
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("404", "NoSuchKey", "NoSuchBucket", "403", "AccessDenied"):
            raise SourceError(f'Document "s3://{location}" cannot be read ({code})') from exc
        raise TransientSourceError(f'Reading "s3://{location}" failed: {code}') from exc
    except BotoCoreError as exc:
        raise TransientSourceError(f'Reading "s3://{location}" failed: {exc}') from exc
    except UnicodeDecodeError as exc:
        raise SourceError(f'Document "s3://{location}" is not UTF-8 text') from exc


_READERS: dict[str, Reader] = {"file": read_local_file, "s3": read_s3_object}


def register_reader(scheme: str, reader: Reader) -> None:
    """Read sources written ``<scheme>://...`` with ``reader``."""
    _READERS[scheme.lower()] = reader


def read_document(source: str) -> str:
    """The text of ``source``: a local path, ``file://path``, or any registered ``scheme://...``."""
    match = _SCHEME.match(source)
    scheme, location = (match.group("scheme").lower(), match.group("rest")) if match else ("file", source)
    reader = _READERS.get(scheme)
    if reader is None:
        known = ", ".join(f"{name}://" for name in sorted(_READERS))
        raise SourceError(f'No reader for "{scheme}://" sources (known: {known}, or a plain file path)')
    return reader(location)
