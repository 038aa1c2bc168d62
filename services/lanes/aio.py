"""The asynchronous client API: ``from lanes.aio import Admin, Consumer, Producer``."""

from lanes.client.admin import AsyncAdmin as Admin
from lanes.client.consumer import AsyncConsumer as Consumer
from lanes.client.producer import AsyncProducer as Producer

__all__ = ["Admin", "Consumer", "Producer"]
