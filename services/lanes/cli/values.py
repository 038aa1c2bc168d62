"""Flag values the CLI reads: timestamps, start positions, reset targets, ``k=v`` pairs, sizes.

Pure functions; every refusal is a ``UsageError`` whose message names the flag and shows a
valid form. Timestamps are ISO 8601 (``2026-11-22T10:00:00Z``, ``2026-11-22 10:00``,
``2026-11-22``); without a zone they are local time, as a person at a shell means them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime


class UsageError(Exception):
    """A flag value the parser accepted but the command cannot use (exit 2)."""


def parse_timestamp_ms(text: str, flag: str) -> int:
    """An ISO 8601 timestamp as milliseconds since the epoch (naive means local time)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"{flag}: {text!r} is not an ISO 8601 timestamp; use e.g. 2026-11-22T10:00:00Z or 2026-11-22"
        ) from None
    return int(moment.timestamp() * 1000)  # naive datetimes: timestamp() takes them as local time


@dataclass(frozen=True)
class StartPosition:
    """Where a consumer starts: ``earliest``, ``latest``, an offset, or a timestamp (ms)."""

    kind: str  # "earliest" | "latest" | "offset" | "timestamp"
    value: int = 0


def parse_start(text: str) -> StartPosition:
    """``--from``: ``earliest`` | ``latest`` | OFFSET | ISO-TIMESTAMP."""
    word = text.strip().lower()
    if word in {"earliest", "beginning"}:
        return StartPosition("earliest")
    if word in {"latest", "end"}:
        return StartPosition("latest")
    if word.lstrip("-").isdigit():
        offset = int(word)
        if offset < 0:
            raise UsageError(f"--from: offset {offset} is negative; offsets start at 0")
        return StartPosition("offset", offset)
    try:
        return StartPosition("timestamp", parse_timestamp_ms(text, "--from"))
    except UsageError:
        raise UsageError(
            f"--from: {text!r} is not earliest, latest, an offset or an ISO 8601 timestamp (e.g. 2026-11-22T10:00:00Z)"
        ) from None


def parse_reset_target(text: str) -> str:
    """``--to`` of ``groups reset-offsets`` as the Admin's spec: ``earliest``, ``latest``,
    ``offset:N``, ``shift:N``, and ``timestamp:ISO`` (converted to ``timestamp:MS``)."""
    kind, sep, value = text.strip().partition(":")
    kind = kind.lower()
    if kind in {"earliest", "latest"} and not sep:
        return kind
    if kind in {"offset", "shift"} and sep and value.strip().lstrip("-").isdigit():
        number = int(value)
        if kind == "offset" and number < 0:
            raise UsageError(f"--to: offset {number} is negative; offsets start at 0")
        return f"{kind}:{number}"
    if kind == "timestamp" and sep and value:
        return f"timestamp:{parse_timestamp_ms(value, '--to timestamp')}"
    raise UsageError(
        f"--to: {text!r} is not one of earliest, latest, offset:N, shift:N (N may be negative), "
        "timestamp:ISO-8601 (e.g. timestamp:2026-11-22T10:00:00Z)"
    )


def parse_pairs(pairs: Sequence[str], flag: str) -> dict[str, str]:
    """``NAME=VALUE`` flag values as a dict, in order; a value without ``=`` names the flag."""
    parsed: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"{flag} takes NAME=VALUE, not {pair!r}")
        parsed[name.strip()] = value
    return parsed


def human_bytes(size: int | None) -> str:
    """``1536`` -> ``1.5 KiB``; None -> ``-``."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def _whole_number(text: str, minimum: int) -> int:
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"{number} must be at least {minimum}")
    return number


def positive_seconds(text: str) -> float:
    """An argparse ``type`` for intervals: a number of seconds above 0."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"{text} must be above 0 seconds")
    return seconds


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts: a whole number of at least 1."""
    return _whole_number(text, 1)


def non_negative_int(text: str) -> int:
    """An argparse ``type`` for partitions and offsets: a whole number of at least 0."""
    return _whole_number(text, 0)
