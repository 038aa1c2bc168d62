"""The asynchronous clients: ``from lanes.aio import Admin, Consumer, Producer, Scanner``.

The same clients as ``lanes.Admin``, ``lanes.Consumer``, ``lanes.Producer`` and ``lanes.Scanner``, with coroutine
methods, for code that runs its own event loop; they take and return the same types.
"""

from lanes.client.admin import AsyncAdmin as Admin
from lanes.client.consumer import AsyncConsumer as Consumer
from lanes.client.producer import AsyncProducer as Producer
from lanes.client.scanner import AsyncScanner as Scanner

__all__ = ["Admin", "Consumer", "Producer", "Scanner"]
