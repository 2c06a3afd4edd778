"""What ``cairn jobs`` options resolve to: the API's URL, how to authenticate, a ``--state`` or ``--payload``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from ..bundle.command_line import number
from .auth import Auth, BearerAuth, NoAuth, SigV4Auth
from .http import DEFAULT_API

ENV_API = "CAIRN_API"
ENV_TOKEN = "CAIRN_TOKEN"
ENV_IDENTITY = "CAIRN_IDENTITY"
AUTH_MODES = ("none", "iam", "jwt")


class UsageError(Exception):
    """A mistake in the command line (exit status 2), in one line."""


def api_url(given: str | None, environ: Mapping[str, str]) -> str:
    """``--api``, else ``$CAIRN_API``, else the local dev server's URL."""
    return given or environ.get(ENV_API) or DEFAULT_API


def default_auth_mode(url: str, token: str | None) -> str:
    """``jwt`` with a token; else ``iam`` for an https URL (a deployed API); else ``none`` (a local server)."""
    if token:
        return "jwt"
    return "iam" if urlsplit(url).scheme == "https" else "none"


def make_auth(
    mode: str | None,
    url: str,
    *,
    token: str | None,
    token_given: bool,
    identity: str | None,
    identity_given: bool,
    region: str | None,
) -> Auth:
    """The auth for ``--auth`` (None: chosen from the URL and the token); contradictory options are a UsageError.

    ``token_given`` and ``identity_given`` say whether the value came from the command line (an
    environment variable that does not apply to the mode is ignored).
    """
    chosen = mode or default_auth_mode(url, token)
    if chosen != "jwt" and token_given:
        raise UsageError(f"--token is for --auth jwt, not --auth {chosen}")
    if chosen != "none" and identity_given:
        raise UsageError(
            "--as names the caller of a local server (--auth none); a deployed API takes it from the credentials"
        )
    if chosen == "jwt":
        if not token or not token.strip():
            raise UsageError(f"--auth jwt needs a token: --token TOKEN or ${ENV_TOKEN}")
        return BearerAuth(token)
    if chosen == "iam":
        return SigV4Auth(region)
    return NoAuth(identity)


def read_json(value: str, stdin: TextIO, *, option: str = "--state") -> Any:
    """The JSON ``option`` (``--state``, ``--payload``) names: ``@FILE``, ``@-`` (standard input) or the JSON text."""
    if value.startswith("@"):
        source = value[1:]
        if not source:
            raise UsageError(f"{option} @ needs a file name (or @- for standard input)")
        where = "standard input" if source == "-" else source
        try:
            text = stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{option}: cannot read {where}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"{option}: {where} is not UTF-8 text") from None
    else:
        where, text = "the value", value
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        hint = f" (to read a file, write {option} @{value})" if not value.startswith(("@", "{", "[")) else ""
        raise UsageError(
            f"{option}: {where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{hint}"
        ) from None


def positive(kind: type[int] | type[float]) -> Callable[[str], Any]:
    """An argparse ``type``: a number of ``kind`` above 0, else a clear error naming what was given."""

    def parse(text: str) -> Any:
        value = number(text, kind, "number")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0: {text!r}")
        return value

    return parse
