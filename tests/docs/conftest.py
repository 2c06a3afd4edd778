"""After a run that collected the documentation's tests: the README's length, the examples run, the docstrings."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line of the documentation's figures (worked out here, so it shows with pytest-xdist too)."""
    from tests.docs.examples import summary

    terminalreporter.write_sep("-", "documentation")
    terminalreporter.write_line(summary())
