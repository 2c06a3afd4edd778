"""``cairn dev``'s functions print no EMF metrics blob per request unless asked (``--metrics``, CAIRN_DEV_METRICS=1)."""

from __future__ import annotations

import os

import pytest

from cairn.cli import main
from cairn.dev import server as dev_server
from cairn.dev.server import DevServer, worker_environment

SWITCH = "POWERTOOLS_METRICS_DISABLED"


def workers_switch(monkeypatch: pytest.MonkeyPatch, *arguments: str) -> str | None:
    """What ``cairn dev`` with ``arguments`` gives its workers for Powertools' metrics switch."""
    seen: list[str | None] = []

    def start(self: DevServer) -> None:
        seen.append(worker_environment("http://127.0.0.1:1").get(SWITCH))
        raise KeyboardInterrupt  # stop at once: the workers' environment is all this test reads

    monkeypatch.setattr(dev_server.DevServer, "start", start)
    assert main(["dev", "--no-reload", *arguments]) == 130
    return seen[0]


def test_the_workers_print_no_metrics_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAIRN_DEV_METRICS", raising=False)
    monkeypatch.delenv(SWITCH, raising=False)

    assert workers_switch(monkeypatch) == "true"
    assert SWITCH not in os.environ  # the command leaves the calling process as it found it


@pytest.mark.parametrize(("arguments", "variable"), [(("--metrics",), None), ((), "1")])
def test_metrics_are_shown_when_asked(
    monkeypatch: pytest.MonkeyPatch, arguments: tuple[str, ...], variable: str | None
) -> None:
    monkeypatch.delenv(SWITCH, raising=False)
    if variable is None:
        monkeypatch.delenv("CAIRN_DEV_METRICS", raising=False)
    else:
        monkeypatch.setenv("CAIRN_DEV_METRICS", variable)

    assert workers_switch(monkeypatch, *arguments) == "false"
