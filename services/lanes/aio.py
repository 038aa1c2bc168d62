"""The asynchronous client API: ``from lanes.aio import Admin``."""

from lanes.client.admin import AsyncAdmin as Admin

__all__ = ["Admin"]
