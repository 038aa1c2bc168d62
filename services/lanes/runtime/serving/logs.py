"""Service logging: one line per event on stderr (stdout carries the readiness line), as text for
people or as JSON for log pipelines (``--log-format json``, env ``LANES_LOG_FORMAT``).

Every line carries the same fields, whichever the format:

- ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message``;
- ``service`` (controller, broker, coordinator) and ``node_id`` (the broker's, coordinator's or
  controller's id), set once per process;
- ``topic``, ``partition``, ``group`` when the call passes them:
  ``log.info("leading %s-%d", topic, partition, extra=fields(topic=topic, partition=partition))``;
- ``error`` (the exception's type and message) and ``traceback`` when one is logged.

A JSON line is one object: ``{"time": "2026-11-23T16:47:01.765Z", "level": "INFO",
"service": "broker", "node_id": 1, "logger": "lanes.broker.service", "message": "...",
"topic": "orders", "partition": 3}``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

#: Fields a call may attach to its line (``extra=fields(...)``).
CONTEXT_FIELDS = ("topic", "partition", "group")
FORMATS = ("text", "json")


def fields(**values: Any) -> dict[str, Any]:
    """``extra`` for a log call: the context fields given, None values left out."""
    unknown = set(values) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"unknown log fields {sorted(unknown)}; known: {CONTEXT_FIELDS}")
    return {name: value for name, value in values.items() if value is not None}


def _timestamp(record: logging.LogRecord) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


class _Identity(logging.Filter):
    """Stamps every record with the process's service and node id."""

    def __init__(self, service: str, node_id: int | None) -> None:
        super().__init__()
        self.service = service
        self.node_id = node_id

    def filter(self, record: logging.LogRecord) -> bool:
        record.service = self.service
        record.node_id = self.node_id
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line with the fields in the module docstring."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "service": getattr(record, "service", None),
            "node_id": getattr(record, "node_id", None),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            if hasattr(record, name):
                line[name] = getattr(record, name)
        if record.exc_info and record.exc_info[1] is not None:
            line["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
            line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL service[node] logger message key=value...``, for people."""

    def format(self, record: logging.LogRecord) -> str:
        node = getattr(record, "node_id", None)
        who = f"{getattr(record, 'service', '-')}" + (f"[{node}]" if node is not None else "")
        context = "".join(f" {name}={getattr(record, name)}" for name in CONTEXT_FIELDS if hasattr(record, name))
        line = f"{_timestamp(record)} {record.levelname} {who} {record.name} {record.getMessage()}{context}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(level: str, log_format: str = "text", *, service: str = "-", node_id: int | None = None) -> None:
    """Log ``level`` and above to stderr in ``log_format`` (text or json), every line stamped
    with ``service`` and ``node_id``. Replaces whatever handlers the root logger had."""
    if log_format not in FORMATS:
        raise ValueError(f"log format {log_format!r} is not one of {', '.join(FORMATS)}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(_Identity(service, node_id))
    root = logging.getLogger()
    for previous in list(root.handlers):
        root.removeHandler(previous)
    root.addHandler(handler)
    root.setLevel(level.upper())
