"""Which records a scan keeps: conditions on key, value, headers and JSON members, all of which
must hold, and a time range (``Broker.Scan``, ``lanes consume --filter``, the console's search).

``RecordFilter.of`` checks a filter against the bounds (``MAX_CONDITIONS``, ``MAX_OPERAND_BYTES``,
``MAX_NAME_BYTES``, the JSON path's own) and raises FilterError with a message a user can act on.

Costs are bounded by what they read: byte tests are substring searches (linear), a JSON test
parses the value once per record however many JSON conditions there are. ``needles`` are the
bytes every match must contain somewhere in its batch (from un-negated key, value and header
tests), so a scan skips a batch that holds none of them without decoding a record.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

from lanes.protocol.records import Record
from lanes.search.json_path import MISSING, JsonPath, JsonPathError, parse_json_path

MAX_CONDITIONS = 16
MAX_OPERAND_BYTES = 4096
MAX_NAME_BYTES = 256


class Field(IntEnum):
    """The part of a record a condition tests (``ScanCondition.Field``)."""

    KEY = 1
    VALUE = 2
    HEADER = 3
    JSON = 4


class Check(IntEnum):
    """How a condition tests its part of the record (``ScanCondition.Test``)."""

    EQUALS = 1
    CONTAINS = 2
    EXISTS = 3


class FilterError(ValueError):
    """A filter outside the language or its bounds; the message says which condition and why."""


@dataclass(frozen=True)
class Condition:
    """One test. ``name``: the header's name, or the JSON path. ``negate``: keep records that fail it."""

    field: Field
    test: Check
    operand: bytes = b""
    name: str = ""
    negate: bool = False

    def describe(self) -> str:
        """The condition in the CLI's words (``value~abc``, ``header:trace=x``, ``!key``)."""
        subject = {Field.KEY: "key", Field.VALUE: "value", Field.HEADER: f"header:{self.name}", Field.JSON: self.name}
        sign = {Check.EQUALS: "=", Check.CONTAINS: "~", Check.EXISTS: ""}[self.test]
        operand = self.operand.decode("utf-8", "replace") if self.test is not Check.EXISTS else ""
        return f"{'!' if self.negate else ''}{subject[self.field]}{sign}{operand}"


@dataclass(frozen=True)
class _Compiled:
    condition: Condition
    path: JsonPath | None
    literal: object  # the parsed JSON operand of a JSON EQUALS test
    text: str  # the operand as text, for a JSON CONTAINS test


def _same_json(found: object, literal: object) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(found, bool) or isinstance(literal, bool):
        return isinstance(found, bool) and isinstance(literal, bool) and found == literal
    return found == literal


@dataclass(frozen=True)
class RecordFilter:
    """Conditions (all must hold) and a time range ``[from_ms, to_ms)`` (None: unbounded)."""

    conditions: tuple[Condition, ...] = ()
    from_ms: int | None = None
    to_ms: int | None = None
    _compiled: tuple[_Compiled, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, conditions: Sequence[Condition], from_ms: int | None = None, to_ms: int | None = None) -> RecordFilter:
        """A checked filter; FilterError naming the first condition out of bounds."""
        if len(conditions) > MAX_CONDITIONS:
            raise FilterError(f"a filter has at most {MAX_CONDITIONS} conditions (this one has {len(conditions)})")
        if from_ms is not None and to_ms is not None and to_ms <= from_ms:
            raise FilterError(f"the time range is empty: it ends ({to_ms}) at or before it starts ({from_ms})")
        compiled = tuple(_compile(number, condition) for number, condition in enumerate(conditions, 1))
        return cls(tuple(conditions), from_ms, to_ms, compiled)

    @property
    def needles(self) -> tuple[bytes, ...]:
        """Bytes each match's batch contains (see the module docstring)."""
        return tuple(
            c.operand
            for c in self.conditions
            if not c.negate and c.operand and c.field is not Field.JSON and c.test is not Check.EXISTS
        )

    def may_follow(self, max_timestamp_ms: int) -> bool:
        """Whether a batch whose newest record has ``max_timestamp_ms`` may hold records in the
        range (a batch's first timestamp is no lower bound: later records may be older)."""
        return self.from_ms is None or max_timestamp_ms >= self.from_ms

    def matches(self, record: Record) -> bool:
        """Whether ``record`` meets the time range and every condition."""
        if (self.from_ms is not None and record.timestamp < self.from_ms) or (
            self.to_ms is not None and record.timestamp >= self.to_ms
        ):
            return False
        document: object = MISSING
        parsed = False
        for compiled in self._compiled:
            condition = compiled.condition
            if condition.field is Field.JSON:
                if not parsed:
                    document, parsed = _parse(record.value), True
                held = _json_holds(compiled, document)
            elif condition.field is Field.HEADER:
                held = any(
                    condition.test is Check.EXISTS or _bytes_hold(condition, value)
                    for name, value in record.headers
                    if name == condition.name
                )
            else:
                held = _bytes_hold(condition, record.key if condition.field is Field.KEY else record.value)
            if held == condition.negate:
                return False
        return True


def _compile(number: int, condition: Condition) -> _Compiled:
    where = f"condition {number} ({condition.describe()[:80]})"
    if len(condition.operand) > MAX_OPERAND_BYTES:
        raise FilterError(f"{where}: an operand is at most {MAX_OPERAND_BYTES} bytes")
    if len(condition.name.encode()) > MAX_NAME_BYTES:
        raise FilterError(f"{where}: a header name or JSON path is at most {MAX_NAME_BYTES} bytes")
    if condition.field is Field.HEADER and not condition.name:
        raise FilterError(f"{where}: a header condition names the header")
    if condition.field is not Field.JSON:
        return _Compiled(condition, None, None, "")
    try:
        path = parse_json_path(condition.name)
    except JsonPathError as exc:
        said = str(exc) if "JSON path" in str(exc) else f"not a JSON path: {exc}"
        raise FilterError(f"{where}: {said}") from None
    literal: object = None
    text = ""
    try:
        if condition.test is Check.EQUALS:
            literal = json.loads(condition.operand)
        elif condition.test is Check.CONTAINS:
            text = condition.operand.decode()
    except (ValueError, RecursionError):
        wanted = 'a JSON literal ("text", 42, true, null)' if condition.test is Check.EQUALS else "UTF-8 text"
        raise FilterError(f"{where}: the operand must be {wanted}") from None
    return _Compiled(condition, path, literal, text)


def _bytes_hold(condition: Condition, found: bytes | None) -> bool:
    if found is None:
        return False
    if condition.test is Check.EQUALS:
        return found == condition.operand
    if condition.test is Check.CONTAINS:
        return condition.operand in found
    return True


def _parse(value: bytes | None) -> object:
    """The value as JSON, or ``MISSING`` when it is absent or not JSON."""
    if value is None:
        return MISSING
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return MISSING


def _json_holds(compiled: _Compiled, document: object) -> bool:
    if document is MISSING or compiled.path is None:
        return False
    found = compiled.path.find(document)
    if found is MISSING:
        return False
    test = compiled.condition.test
    if test is Check.EQUALS:
        return _same_json(found, compiled.literal)
    if test is Check.CONTAINS:
        return isinstance(found, str) and compiled.text in found
    return True


def parse_condition(text: str) -> Condition:
    """A condition in the CLI's and the console's words (docs/clients.md, "Searching"):

    ``key=ID`` ``key~part`` ``key`` (has a key) ``value~part`` ``value=whole``
    ``header:NAME=value`` ``header:NAME~part`` ``header:NAME`` (present)
    ``$.path=LITERAL`` (a JSON literal; anything else is taken as a string: ``$.sym=ABC``)
    ``$.path~part`` (a string containing it) ``$.path`` (present); ``!`` in front negates.
    FilterError when it is none of these."""
    if len(text) > MAX_NAME_BYTES + MAX_OPERAND_BYTES + 16:
        raise FilterError("a condition is at most a name of 256 bytes and an operand of 4 KiB")
    negate = text.startswith("!")
    body = text[1:] if negate else text
    split = _operator_at(body)
    subject, sign, operand = (body, "", "") if split < 0 else (body[:split], body[split], body[split + 1 :])
    test = {"=": Check.EQUALS, "~": Check.CONTAINS, "": Check.EXISTS}[sign]
    if subject in ("key", "value"):
        field, name = (Field.KEY if subject == "key" else Field.VALUE), ""
    elif subject.startswith("header:"):
        field, name = Field.HEADER, subject[len("header:") :]
    elif subject.startswith("$"):
        field, name = Field.JSON, subject
        if test is Check.EQUALS:
            operand = operand if _is_json(operand) else json.dumps(operand)
    else:
        raise FilterError(
            f"{text!r}: a condition tests key, value, header:NAME or a JSON path ($.field), "
            "with = (equals), ~ (contains) or nothing (present), as value~error or $.price=42"
        )
    condition = Condition(field, test, operand.encode(), name, negate)
    _compile(1, condition)  # (checks it now, with this message)
    return condition


def _operator_at(body: str) -> int:
    """Where the first ``=`` or ``~`` outside a JSON path's quoted names is, or -1."""
    quote = ""
    escaped = False
    for index, char in enumerate(body):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"" and body.startswith("$"):
            quote = char
        elif char in "=~":
            return index
    return -1


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
