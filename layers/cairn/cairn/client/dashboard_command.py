"""``cairn dashboard --api URL``: the dashboard for a deployed API with IAM auth, on 127.0.0.1."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..bundle.command_line import add_subcommand, error, port_number

ENV_API = "CAIRN_API"
DEFAULT_PORT = 3001
SUMMARY = "serve the dashboard on 127.0.0.1 for a deployed API, signing its calls with your AWS credentials"
DESCRIPTION = (
    "Serve the dashboard on 127.0.0.1 and forward its calls to the deployed jobs API, each signed "
    "(SigV4) with your AWS credentials (AWS_PROFILE, environment variables, SSO...): for an API with IAM auth. "
    "`cairn dev` serves the dashboard of the local stack itself."
)


def add_command(commands: argparse._SubParsersAction[Any]) -> None:
    """Register ``cairn dashboard``."""
    dashboard = add_subcommand(commands, "dashboard", run_dashboard, SUMMARY, DESCRIPTION)
    dashboard.add_argument("--api", metavar="URL", help=f"the deployed API's URL (default: ${ENV_API})")
    dashboard.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    dashboard.add_argument("--region", help="the region to sign for (default: from the URL, else your configuration)")


def run_dashboard(arguments: argparse.Namespace) -> int:
    """Serve until Ctrl-C; exit 2 with one line when the API, the credentials or the port will not do."""
    from . import ApiClient, AuthError, SigV4Auth
    from .dashboard_proxy import DashboardProxy

    url = arguments.api or os.environ.get(ENV_API)
    if not url:
        return _error(f"--api URL is required (or ${ENV_API}): the deployed API's URL, e.g. the stack's ApiUrl")
    auth = SigV4Auth(arguments.region)
    try:
        client = ApiClient(url, auth=auth)
        region = auth.region_for(client.base_url)
        auth.credentials()
    except ValueError as exc:
        return _error(str(exc))
    except AuthError as exc:
        return _error(exc.message)
    try:
        proxy = DashboardProxy(client, port=arguments.port, log=lambda line: print(line, flush=True))
    except OSError as exc:
        return _error(f"127.0.0.1:{arguments.port} is already in use ({exc.strerror}): choose another with --port")
    print(f"cairn dashboard: {proxy.address} for the API at {client.base_url} (IAM, signed for {region})", flush=True)
    print("Ready. Ctrl-C stops.", flush=True)
    proxy.serve_forever()
    return 0


def _error(message: str) -> int:
    return error("cairn dashboard", message)
