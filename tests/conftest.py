"""Fixtures for every suite: a fake clock, fake AWS credentials, moto in-process, and a moto server over HTTP."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from moto import mock_aws

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


@pytest.fixture
def aws() -> Iterator[None]:
    """Moto in-process for the test: every boto3 call goes to moto, none leaves the machine."""
    with mock_aws():
        yield


logging.getLogger("werkzeug").setLevel(logging.WARNING)


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
