"""``cairn dev``'s read timeout is ``$CAIRN_DEV_READ_TIMEOUT``'s; one it cannot use stops the start in one line."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from cairn.cli import main
from cairn.dev.process import free_port
from cairn.dev.wsgi_server import READ_TIMEOUT, READ_TIMEOUT_VARIABLE, read_timeout

ROOT = Path(__file__).resolve().parents[2]


def test_the_read_timeout_is_the_variables_else_the_default() -> None:
    assert read_timeout({}) == READ_TIMEOUT
    assert read_timeout({READ_TIMEOUT_VARIABLE: " 2.5 "}) == 2.5
    for text in ("soon", "0", "-1", "nan", "inf"):
        with pytest.raises(ValueError, match=READ_TIMEOUT_VARIABLE):
            read_timeout({READ_TIMEOUT_VARIABLE: text})


@pytest.mark.parametrize("text", ["soon", "0"])
def test_a_read_timeout_it_cannot_use_is_one_line_and_binds_nothing(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(READ_TIMEOUT_VARIABLE, text)
    port = free_port()
    status = main(["dev", "--no-reload", "--template", str(ROOT / "template.yaml"), "--port", str(port)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"cairn dev: error: {READ_TIMEOUT_VARIABLE} "), err
    assert err.count("\n") == 1, err
    with socket.create_server(("127.0.0.1", port)):  # the port was never taken
        pass
