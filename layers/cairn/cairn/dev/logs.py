"""What ``cairn dev`` prints: its own lines, and each function's output, readable on a terminal.

A function's Powertools JSON log line is shown as ``time LEVEL function message key=value``
on a terminal (the keys that repeat on every line left out, an exception indented below);
piped to a file it stays the JSON line, prefixed with the function's name, for tools to read.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

#: Keys Powertools puts on every line: shown only in the raw form.
_REPEATED_KEYS = frozenset(
    {
        "level",
        "message",
        "timestamp",
        "service",
        "sampling_rate",
        "xray_trace_id",
        "location",
        "cold_start",
        "function_arn",
        "function_memory_size",
        "function_name",
        "function_request_id",
        "exception",
        "exception_name",
        "stack_trace",
    }
)
_COLOURS = {"DEBUG": "\033[2m", "INFO": "\033[36m", "WARNING": "\033[33m", "ERROR": "\033[31m", "CRITICAL": "\033[31m"}
_RESET = "\033[0m"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


class DevLog:
    """Writes the server's lines and its functions' output to ``stream``, one whole line at a time."""

    def __init__(self, stream: TextIO | None = None, *, pretty: bool | None = None, stack_prefix: str = "") -> None:
        self.stream = stream or sys.stdout
        self.pretty = self.stream.isatty() if pretty is None else pretty
        self.stack_prefix = stack_prefix
        self._lock = threading.Lock()

    def short_name(self, function: str) -> str:
        """A function's name without the stack's prefix (``document-intake-extract``)."""
        return function.removeprefix(self.stack_prefix) if self.stack_prefix else function

    def write(self, line: str) -> None:
        """Write one line as is."""
        with self._lock:
            self.stream.write(line.rstrip("\n") + "\n")
            self.stream.flush()

    def say(self, source: str, message: str, level: str = "INFO") -> None:
        """A line of the server's own (``source``: ``api``, ``lambda``, ``sqs``...)."""
        self.write(self._format(time.time(), level, source, message, {}))

    def function_output(self, function: str, line: str) -> None:
        """One line a function printed: a Powertools JSON record, or any text."""
        name = self.short_name(function)
        record = _json_record(line)
        if record is None or not self.pretty:
            self.write(f"[{name}] {line.rstrip()}")
            return
        if "_aws" in record:  # an embedded-metrics record: its values on one line
            self.write(self._format(time.time(), "DEBUG", name, "metrics", _metric_values(record)))
            return
        extra = {key: value for key, value in record.items() if key not in _REPEATED_KEYS}
        text = self._format(time.time(), str(record.get("level", "INFO")), name, str(record.get("message", "")), extra)
        trace = record.get("exception")
        if isinstance(trace, str) and trace:
            text += "\n" + "\n".join(f"    {part}" for part in trace.splitlines())
        self.write(text)

    def _format(self, when: float, level: str, source: str, message: str, extra: dict[str, Any]) -> str:
        clock = time.strftime("%H:%M:%S", time.localtime(when))
        fields = "".join(f"  {key}={_value(value)}" for key, value in extra.items())
        label = f"{level:<7}"
        if self.pretty:
            label = f"{_COLOURS.get(level, '')}{label}{_RESET}"
        return f"{clock} {label} {source:<24} {message}{fields}"


def _json_record(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and ("message" in record or "_aws" in record) else None


def _metric_values(record: dict[str, Any]) -> dict[str, Any]:
    """The metric values of an embedded-metrics record (``{"PhaseDuration": 44.9}``), rounded."""
    names = [
        metric.get("Name")
        for directive in record["_aws"].get("CloudWatchMetrics") or []
        for metric in directive.get("Metrics") or []
    ]
    values: dict[str, Any] = {}
    for name in names:
        value = record.get(str(name))
        first = value[0] if isinstance(value, list) and value else value
        values[str(name)] = round(first, 1) if isinstance(first, float) else first
    return values
