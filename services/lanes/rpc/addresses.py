"""Address lists as users and flags give them: ``"host:port,host:port"`` (bootstrap brokers,
controllers). One parser for every client, service and tool."""

from __future__ import annotations


def parse_addresses(text: str, what: str = "bootstrap") -> list[str]:
    """The addresses of a comma-separated list, stripped, without empties or repeats, in order;
    ValueError naming ``what`` when none is left."""
    addresses = list(dict.fromkeys(address.strip() for address in text.split(",") if address.strip()))
    if not addresses:
        raise ValueError(f"{what} needs at least one host:port")
    return addresses
