"""The core library stays free of AWS: importing it loads neither boto3 nor botocore."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_importing_the_core_loads_no_aws_sdk() -> None:
    code = (
        "import sys, cairn\n"
        "from cairn import Pipeline, run_pipeline, MemoryStorage, FileStorage, InlineScheduler\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore'))\n"
        "print(','.join(loaded))\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'layers' / 'cairn'}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == ""


def test_dynamodb_storage_is_available_from_the_package_on_first_use() -> None:
    import cairn
    from cairn.storage.dynamodb import DynamoDBStorage

    assert cairn.DynamoDBStorage is DynamoDBStorage
