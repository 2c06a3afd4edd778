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


@pytest.mark.parametrize("text", ["soon", "0", "-2", "inf", "nan"])
def test_a_read_timeout_flag_it_cannot_use_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["dev", "--template", str(ROOT / "template.yaml"), f"--read-timeout={text}"])
    assert exit_.value.code == 2
    assert "--read-timeout" in capsys.readouterr().err


def test_the_read_timeout_flag_is_read_in_seconds_and_defaults_to_the_variable() -> None:
    import argparse

    from cairn.dev.command import add_command

    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    arguments = parser.parse_args(["dev", "--read-timeout", "2.5"])
    assert arguments.read_timeout == 2.5
    assert parser.parse_args(["dev"]).read_timeout is None
