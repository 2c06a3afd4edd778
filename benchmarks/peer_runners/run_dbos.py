"""DBOS on its SQLite system database: a ``@DBOS.workflow()`` that calls a no-op ``@DBOS.step()`` N times.

Each step's output is checkpointed in the system database (a row of ``operation_outputs``, one transaction).
DBOS's SQLite engine sets only ``busy_timeout`` and ``foreign_keys`` (``dbos/_sys_db_sqlite.py``), so SQLite's
defaults hold: a rollback journal and ``synchronous=FULL``, an fsync at every commit. ``--sync off`` adds
``PRAGMA synchronous=OFF`` on every connection SQLAlchemy opens (a listener on ``Engine``'s ``connect``
event, which DBOS's own engine fires as well); the pragma read back is reported in ``info``. Timed: the
workflow call, from its start to its result. Runs in ``.bench/venvs/dbos``; see ``_harness.py``.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Measure, main

SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


@contextmanager
def session(arguments: argparse.Namespace) -> Iterator[tuple[Measure, dict[str, Any]]]:
    """DBOS launched on a SQLite file in a temporary folder; the workflow timed per call."""
    import sqlalchemy
    from dbos import DBOS
    from sqlalchemy import event

    seen: dict[str, str] = {}

    @event.listens_for(sqlalchemy.engine.Engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        if arguments.sync == "off":
            connection.execute("PRAGMA synchronous=OFF")
        seen["synchronous"] = SYNCHRONOUS.get(connection.execute("PRAGMA synchronous").fetchone()[0], "?")
        seen["journal_mode"] = str(connection.execute("PRAGMA journal_mode").fetchone()[0])

    logging.getLogger("dbos").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="dbos-peers-") as directory:
        DBOS(
            config={
                "name": "peers",
                "system_database_url": f"sqlite:///{directory}/system.sqlite",
                "run_admin_server": False,
            }
        )

        @DBOS.step()
        def noop(index: int) -> int:
            return index

        @DBOS.workflow()
        def steps_workflow(steps: int) -> int:
            for index in range(steps):
                noop(index)
            return steps

        DBOS.launch()
        try:

            def measure(steps: int) -> float:
                started = time.perf_counter()
                result = steps_workflow(steps)
                elapsed = time.perf_counter() - started
                if result != steps:
                    raise RuntimeError(f"DBOS: unexpected result {result!r}")
                return elapsed

            seen["library"] = sqlite3.sqlite_version
            yield measure, {"sqlite": seen}
        finally:
            DBOS.destroy()


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sync", choices=["full", "off"], default="full", help="SQLite synchronous: default or OFF")


if __name__ == "__main__":
    raise SystemExit(main(__doc__ or "", session, packages=("dbos", "SQLAlchemy"), options=_options))
