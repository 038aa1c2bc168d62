"""The client library's implementation: ``lanes`` and ``lanes.aio`` are its public faces.

Every public name of ``lanes``, and the asynchronous clients, stay importable from
``lanes.client`` for code written against earlier versions; new code imports them from ``lanes``
(or ``lanes.aio``). They are looked up on first use, never while this package initialises: it
initialises before any of its modules, so importing them here made importing one client import
all of them, and two threads importing two clients deadlocked on each other's module (issue #35).
"""

from __future__ import annotations

import importlib
from typing import Any

from lanes import __all__ as _public

_ASYNC = {
    "AsyncAdmin": "lanes.client.admin",
    "AsyncConsumer": "lanes.client.consumer",
    "AsyncProducer": "lanes.client.producer",
    "AsyncScanner": "lanes.client.scanner",
}

__all__ = [*_public, *_ASYNC]  # noqa: PLE0604


def __getattr__(name: str) -> Any:
    """The public names of ``lanes`` and the asynchronous clients, on first use."""
    if name in _ASYNC:
        value = getattr(importlib.import_module(_ASYNC[name]), name)
    elif name in _public:
        value = getattr(importlib.import_module("lanes"), name)
    else:
        raise AttributeError(f"module 'lanes.client' has no attribute {name!r}")
    globals()[name] = value
    return value
