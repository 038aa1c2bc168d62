"""The Lanes clients a console session acts with: made with the logged-in user's own credentials,
so the cluster's ACLs decide what each user sees and may do (the console holds no rights of its
own). Only the public client library (``lanes``, ``lanes.aio``) is used.

Owned by the console's event loop.
"""

from __future__ import annotations

import lanes
import lanes.aio

#: what a session logs in with (None: a cluster without authentication)
Credentials = lanes.UserPassword | lanes.BearerToken | None


class UserClients:
    """An admin client, a scanner, a free consumer (offsets) and, on first use, a producer,
    for one user. ``bootstrap``: the cluster's brokers."""

    def __init__(self, bootstrap: str, credentials: Credentials, tls: lanes.TlsFiles | None) -> None:
        self._bootstrap = bootstrap
        self._credentials = credentials
        self._tls = tls
        common = {"credentials": credentials, "tls": tls, "client_id": "lanes-console"}
        self.admin = lanes.aio.Admin(bootstrap, **common)  # type: ignore[arg-type]
        self.scanner = lanes.aio.Scanner(bootstrap, **common)  # type: ignore[arg-type]
        self.offsets = lanes.aio.Consumer(bootstrap, **common)  # type: ignore[arg-type]
        self._producer: lanes.aio.Producer | None = None

    @property
    def producer(self) -> lanes.aio.Producer:
        """The user's producer (made on first use: most sessions never produce)."""
        if self._producer is None:
            self._producer = lanes.aio.Producer(
                self._bootstrap, credentials=self._credentials, tls=self._tls, client_id="lanes-console", linger_ms=0
            )
        return self._producer

    async def close(self) -> None:
        """Close every client (a session ended)."""
        await self.admin.close()
        await self.scanner.close()
        await self.offsets.close()
        if self._producer is not None:
            await self._producer.close()
