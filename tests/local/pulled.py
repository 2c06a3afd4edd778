"""A job file as `cairn jobs pull` writes it: a document-intake job run on the bundle on moto (the "production"
stack, behind a real HTTP server) and pulled through the command line."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cairn.cli import main
from tests.functional.jobs_server import JobsServer
from tests.functional.stacks import moto_stack
from tests.support import FakeClock

DOCUMENT = {"document": "invoice.txt"}


def pull_production_job(target: Path, job_id: str) -> Path:
    """Run a document-intake job on moto an hour ago and pull it into ``target`` (returned)."""
    with moto_stack(FakeClock(start_ms=int(time.time() * 1000) - 3_600_000)) as stack, JobsServer(stack) as server:
        start = ["jobs", "--api", server.url, "start", "document-intake", "--id", job_id]
        assert main([*start, "--state", json.dumps(DOCUMENT)]) == 0
        server.run()
        assert main(["jobs", "--api", server.url, "pull", job_id, "-o", str(target)]) == 0
    return target
