"""Checks that stay on in production (TigerBeetle's assertions, not ``assert``, which ``-O``
removes): a broken invariant stops the work at hand with ``InvariantError`` instead of letting a
wrong state spread (a high-water mark moving back, two votes in one epoch)."""

from __future__ import annotations


class InvariantError(AssertionError):
    """An invariant the code relies on does not hold: a bug, never an input error."""


def invariant(condition: bool, message: str) -> None:
    """Raise ``InvariantError(message)`` unless ``condition`` holds. ``message`` is built on every
    call: on a hot path (every append) write ``if not condition: raise InvariantError(...)``."""
    if not condition:
        raise InvariantError(message)
