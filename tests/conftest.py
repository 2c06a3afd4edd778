"""Fixtures for every suite: a fake clock, fake AWS credentials, moto in-process, and a moto server over HTTP."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto import mock_aws

from cairn.dev.moto_responses import quick_moto_responses
from tests.aws import moto_server, use_fake_credentials
from tests.support import FakeClock

use_fake_credentials()

# The test kit a user gets from the installed library's pytest11 entry point; here cairn is on the path.
pytest_plugins = ["cairn.testing.plugin"]


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test says so."""
    return FakeClock()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """The URL of a moto server on a free loopback port, shared by the session."""
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture(scope="session", autouse=True)
def quick_moto() -> Iterator[None]:
    """Moto, in-process and in the moto servers, builds its responses as ``cairn dev``'s does: the same answers faster.

    :func:`cairn.dev.moto_responses.quick_moto_responses` reads the members of a plain response dict without moto's
    per-value alias search (a tenth of a DynamoDB test's time); tests/benchmarks/test_moto_speedups.py checks that
    every response it builds is byte for byte moto's own.
    """
    with quick_moto_responses():
        yield


@pytest.fixture
def aws() -> Iterator[None]:
    """Moto in-process for the test: every boto3 call goes to moto, none leaves the machine."""
    with mock_aws():
        yield


logging.getLogger("werkzeug").setLevel(logging.WARNING)

# -- The two tiers (docs/contributing.md). `make test` runs what a change most often breaks: the engine, the stores'
# contract on memory with a slice of it on DynamoDB, the API, the CLI, the template. `make test-long` runs the long
# proofs: every store's contract and fault schedules in full, the browser, `cairn dev` processes, the chaos run.
# CI runs both. A test joins the long tier here, by its folder, its file or the store it runs on; never by hand.
TESTS = Path(__file__).resolve().parent
LONG_FOLDERS = ("browser", "local", "reliability")
"""Folders whose every test is long: a real browser, `cairn dev` in a child process, the chaos run."""
LONG_FILES = (
    "benchmarks/test_cost_suites.py",
    "benchmarks/test_dev_scale_suite.py",
    "benchmarks/test_fair_share_suite.py",
    "benchmarks/test_map_scaling_suite.py",
    "benchmarks/test_read_units_suite.py",
    "benchmarks/test_runtime_suites.py",
    "benchmarks/test_scale_suite.py",
    "bundle/test_build_state_check.py",
    "bundle/test_init.py",
    "docs/test_bundle_pages.py",
    "functional/test_api_fuzz.py",
    "functional/test_api_reply_limits.py",
    "functional/test_cost_order_read_units.py",
    "functional/test_status_counts_cost.py",
    "functional/test_bulk_ten_thousand.py",
    "functional/test_dashboard_proxy.py",
    "functional/test_dev_dead_letters.py",
    "functional/test_dev_deployment.py",
    "functional/test_dev_ready.py",
    "functional/test_execution_history.py",
    "functional/test_job_read_units.py",
    "functional/test_listing_read_units.py",
    "functional/test_listing_shards.py",
    "functional/test_redaction.py",
    "template/test_handwritten_sync.py",
    "unit/test_install.py",
    "unit/test_release_build.py",
    "unit/test_scaffold.py",
)
"""Files of long proofs elsewhere: the benchmark suites' quick runs, read units at hundreds of jobs and a thousand
transitions, Step Functions executions handing a job on and running maps in rounds, whole bundles from
``cairn init`` and ``cairn new`` (their own checks run in them, their layer's build too), the API fuzzed from its
OpenAPI document, ``cairn dev``'s deployment and processes, a fresh virtualenv, a bulk of 10,000 jobs."""
PROPERTY_FILES = ("contract/test_crash_recovery.py", "contract/test_fault_schedules.py")
"""The crash and fault properties: on memory in ``make test``, on every other store in ``make test-long``."""
QUICK_STORES = {"memory"}
"""The stores a contract test (``storage_kind``) or a fault schedule (``backend``) runs on in ``make test``."""
DYNAMODB_SLICE = 4
"""One contract test in this many also runs on in-process DynamoDB in ``make test`` (chosen by its name)."""


def is_long(item: pytest.Item) -> bool:
    """Whether ``item`` belongs to the long tier (``make test-long``)."""
    path = Path(str(item.path)).relative_to(TESTS).as_posix()
    if path.split("/", 1)[0] in LONG_FOLDERS or path in LONG_FILES:
        return True
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    store = params.get("storage_kind", params.get("backend"))
    if store is None:
        return "botocore_backend" in getattr(item, "fixturenames", ())
    if store in QUICK_STORES:
        return False
    sliced = store == "dynamodb" and path not in PROPERTY_FILES
    return not (sliced and zlib.crc32(getattr(item, "originalname", item.name).encode()) % DYNAMODB_SLICE == 0)


# -- What `make scaffold-check` reruns after `cairn new` adds a pipeline: the tests that enumerate what it changes (the
# registry, the template's functions, the sample events, the state schemas), and the scaffolded pipeline's own tests.
# A test that only runs one of the bundle's pipelines does not depend on which others the bundle holds.
BUNDLE_FOLDERS = ("template", "bundle", "pipelines")
BUNDLE_FILES = (
    "docs/test_reference_pages.py",
    "functional/test_api_errors.py",
    "functional/test_api_events.py",
    "functional/test_api_pipelines.py",
    "functional/test_events_env.py",
    "functional/test_phase_functions.py",
    "functional/test_pipeline_events.py",
    "functional/test_scheduler_events.py",
    "functional/test_two_pipelines.py",
    "unit/test_bundle_events.py",
    "unit/test_registry.py",
)
"""Files elsewhere whose tests go through every pipeline, function or sample event of the bundle."""


def reads_the_bundle(path: Path) -> bool:
    """Whether the test module at ``path`` enumerates what ``cairn new`` changes in the bundle."""
    relative = path.relative_to(TESTS).as_posix()
    return relative.split("/", 1)[0] in BUNDLE_FOLDERS or relative in BUNDLE_FILES


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the long tier's tests ``long`` and the bundle's readers ``bundle``.

    ``-m "not long"`` is ``make test``, ``-m long`` is ``make test-long``, ``-m "bundle and not long"`` what
    ``make scaffold-check`` reruns.
    """
    for item in items:
        if is_long(item):
            item.add_marker(pytest.mark.long)
        if reads_the_bundle(Path(str(item.path))):
            item.add_marker(pytest.mark.bundle)
    items.sort(key=dispatch_order)


def dispatch_order(item: pytest.Item) -> int:
    """Where ``item`` goes in the order the workers are handed tests (``--dist loadgroup``, in collection order):
    the e2e tests first, then the groups one worker runs in a row (the browser's, each ``cairn dev`` stack's), then
    the rest, one test at a time, so no long chain starts last while the other worker has nothing left to do."""
    if item.get_closest_marker("e2e") is not None:
        return 0
    return 1 if item.get_closest_marker("xdist_group") is not None else 2


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After the run: how many fault schedules tests/contract/test_fault_schedules.py ran, per storage."""
    import sys

    schedules = sys.modules.get("tests.contract.fault_schedules")
    line = schedules.summary() if schedules is not None else ""
    if schedules is not None:
        schedules.record_figures()
    if line:
        terminalreporter.write_sep("-", "fault schedules")
        terminalreporter.write_line(line)
    # The documentation's figures (README length, examples run, docstrings), worked out here in the controller so
    # they show with pytest-xdist too, whenever the run included the documentation's tests.
    reports = (report for kind in terminalreporter.stats.values() for report in kind)
    if any(str(getattr(report, "nodeid", "")).startswith("tests/docs/") for report in reports):
        from tests.docs.examples import summary

        terminalreporter.write_sep("-", "documentation")
        terminalreporter.write_line(summary())
