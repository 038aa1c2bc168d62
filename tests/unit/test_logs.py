"""Service log lines: the same fields as JSON or text, context fields from ``extra``."""

from __future__ import annotations

import json
import logging

import pytest

from lanes.runtime.serving.logs import configure_logging, fields


@pytest.fixture(autouse=True)
def restore_root_logger():  # type: ignore[no-untyped-def]
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_json_lines_carry_the_service_node_and_context(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("info", "json", service="broker", node_id=3)
    log = logging.getLogger("lanes.broker.service")
    log.info("leading %s-%d at epoch %d", "orders", 2, 7, extra=fields(topic="orders", partition=2))
    log.debug("not shown")
    try:
        raise OSError("disk full")
    except OSError:
        log.exception("append failed", extra=fields(topic="orders", partition=2, group=None))
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    assert len(lines) == 2
    first, second = lines
    assert first["message"] == "leading orders-2 at epoch 7"
    assert (first["level"], first["service"], first["node_id"], first["logger"]) == (
        "INFO",
        "broker",
        3,
        "lanes.broker.service",
    )
    assert (first["topic"], first["partition"]) == ("orders", 2)
    assert "group" not in first
    assert "group" not in second
    assert first["time"].endswith("Z")
    assert "T" in first["time"]
    assert second["error"] == "OSError: disk full"
    assert "Traceback" in second["traceback"]


def test_text_lines_carry_the_same_fields(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", "text", service="coordinator", node_id=1)
    logging.getLogger("lanes.coordinator.service").warning("slow", extra=fields(group="billing"))
    line = capsys.readouterr().err.strip()
    assert " WARNING coordinator[1] lanes.coordinator.service slow group=billing" in line


def test_unknown_formats_and_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="not one of text, json"):
        configure_logging("info", "xml")
    with pytest.raises(ValueError, match="unknown log fields"):
        fields(offset=3)
