"""The client library's implementation: ``lanes`` and ``lanes.aio`` are its public faces.

Every public name of ``lanes``, and the asynchronous clients, stay importable from
``lanes.client`` for code written against earlier versions; new code imports them from ``lanes``
(or ``lanes.aio``).
"""

from lanes import *  # noqa: F403  (the public names, for earlier imports)
from lanes import __all__ as _public
from lanes.client.admin import AsyncAdmin
from lanes.client.consumer import AsyncConsumer
from lanes.client.producer import AsyncProducer

__all__ = [*_public, "AsyncAdmin", "AsyncConsumer", "AsyncProducer"]  # noqa: PLE0604
