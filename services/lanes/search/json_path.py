"""JSON paths of a record filter: ``$``, then members and indexes (``$.order.lines[0]['unit price']``).

A deliberately small language, parsed here in linear time: a path names one member, never a set
(no wildcards, slices, recursive descent or filter expressions, which JSONPath libraries evaluate
with unbounded work), so a hostile path costs its length and no more. Bounded: at most
``MAX_PATH_CHARS`` characters and ``MAX_STEPS`` steps. Pure: no I/O.

Grammar::

    path  := "$" step*
    step  := "." name | "[" index "]" | "[" quoted "]"
    name  := [A-Za-z_][A-Za-z0-9_-]*
    index := [0-9]+
    quoted:= "'" chars "'" | '"' chars '"'      (backslash escapes the next character)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_PATH_CHARS = 256
MAX_STEPS = 32

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_INDEX = re.compile(r"[0-9]{1,9}")

#: the marker of a member that is not there (a JSON value may be null)
MISSING = object()


class JsonPathError(ValueError):
    """A path outside the grammar; the message says where."""


@dataclass(frozen=True)
class JsonPath:
    """A parsed path: member names (str) and array indexes (int), in order."""

    text: str
    steps: tuple[str | int, ...]

    def find(self, document: object) -> object:
        """The member the path names in ``document`` (parsed JSON), or ``MISSING``."""
        found = document
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(found, list) or step >= len(found):
                    return MISSING
                found = found[step]
            else:
                if not isinstance(found, dict) or step not in found:
                    return MISSING
                found = found[step]
        return found


def parse_json_path(text: str) -> JsonPath:
    """Parse ``text``; JsonPathError when it is not a path of the grammar or exceeds the bounds."""
    if len(text) > MAX_PATH_CHARS:
        raise JsonPathError(f"a JSON path is at most {MAX_PATH_CHARS} characters (this one has {len(text)})")
    if not text.startswith("$"):
        raise JsonPathError(f"a JSON path starts with $ (as $.price or $.lines[0].sku): {text!r}")
    steps: list[str | int] = []
    position = 1
    while position < len(text):
        if len(steps) == MAX_STEPS:
            raise JsonPathError(f"a JSON path has at most {MAX_STEPS} steps")
        char = text[position]
        if char == ".":
            name = _NAME.match(text, position + 1)
            if name is None:
                raise JsonPathError(f"a member name (letters, digits, _ and -) expected at {position + 1} of {text!r}")
            steps.append(name.group())
            position = name.end()
        elif char == "[":
            step, position = _bracket(text, position + 1)
            steps.append(step)
        else:
            raise JsonPathError(f"'.' or '[' expected at {position} of {text!r}")
    return JsonPath(text, tuple(steps))


def _bracket(text: str, position: int) -> tuple[str | int, int]:
    """The step in brackets starting at ``position`` (after '['), and the position after ']'."""
    index = _INDEX.match(text, position)
    if index is not None:
        end = index.end()
        if text[end : end + 1] != "]":
            raise JsonPathError(f"']' expected at {end} of {text!r}")
        return int(index.group()), end + 1
    quote = text[position : position + 1]
    if quote not in ("'", '"'):
        raise JsonPathError(f"an index or a quoted name expected at {position} of {text!r}")
    name: list[str] = []
    position += 1
    while position < len(text):
        char = text[position]
        if char == "\\" and position + 1 < len(text):
            name.append(text[position + 1])
            position += 2
        elif char == quote:
            if text[position + 1 : position + 2] != "]":
                raise JsonPathError(f"']' expected at {position + 1} of {text!r}")
            return "".join(name), position + 2
        else:
            name.append(char)
            position += 1
    raise JsonPathError(f"unterminated quoted name in {text!r}")
