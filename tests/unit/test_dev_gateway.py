"""The local HTTP API's routing and the dev server's log lines."""

from __future__ import annotations

import io
import json

from cairn.dev.gateway import CompiledRoute
from cairn.dev.logs import DevLog
from cairn.dev.models import Route


def test_template_paths_match_whole_paths_and_read_their_parameters() -> None:
    route = CompiledRoute.of(Route("GET", "/jobs/{jobId}", False))
    assert route.key == "GET /jobs/{jobId}"
    found = route.pattern.fullmatch("/jobs/invoice-1")
    assert found is not None
    assert found.groupdict() == {"jobId": "invoice-1"}
    assert route.pattern.fullmatch("/jobs/invoice-1/log") is None
    assert route.pattern.fullmatch("/jobs/") is None
    greedy = CompiledRoute.of(Route("ANY", "/files/{proxy+}", True))
    found = greedy.pattern.fullmatch("/files/a/b.txt")
    assert found is not None
    assert found.groupdict() == {"proxy": "a/b.txt"}
    assert CompiledRoute.of(Route("GET", "/a.b", False)).pattern.fullmatch("/axb") is None


def test_powertools_lines_are_readable_on_a_terminal_and_raw_in_a_file() -> None:
    line = json.dumps(
        {
            "level": "ERROR",
            "message": "Phase failed",
            "timestamp": "2026-11-30 10:00:00,000+0000",
            "service": "cairn",
            "function_request_id": "r-1",
            "job_id": "j1",
            "exception": "Traceback\n  ValueError: bad",
        }
    )
    terminal, piped = io.StringIO(), io.StringIO()
    DevLog(terminal, pretty=True, stack_prefix="cairn-dev-").function_output("cairn-dev-docs-extract", line)
    DevLog(piped, pretty=False, stack_prefix="cairn-dev-").function_output("cairn-dev-docs-extract", line)
    shown = terminal.getvalue()
    assert "docs-extract" in shown
    assert "Phase failed" in shown
    assert "job_id=j1" in shown
    assert "function_request_id" not in shown
    assert "service" not in shown
    assert "    ValueError: bad" in shown
    assert piped.getvalue() == f"[docs-extract] {line}\n"


def test_embedded_metrics_become_one_line_of_values() -> None:
    record = {
        "_aws": {"CloudWatchMetrics": [{"Namespace": "cairn", "Metrics": [{"Name": "PhaseDuration"}]}]},
        "PhaseDuration": [44.8759],
    }
    out = io.StringIO()
    DevLog(out, pretty=True).function_output("fn", json.dumps(record))
    assert "metrics" in out.getvalue()
    assert "PhaseDuration=44.9" in out.getvalue()
