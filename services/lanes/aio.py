"""The asynchronous client API: ``from lanes.aio import Admin, Producer``."""

from lanes.client.admin import AsyncAdmin as Admin
from lanes.client.producer import AsyncProducer as Producer

__all__ = ["Admin", "Producer"]
