"""When a ``FetchStream`` reads on (decision 0050): one rule, applied by the broker to decide
whether to read the next answer (``ConsumerFetch.read_on``) and by the consumer to know the
stream ends at this one (``Fetcher._fetch_from``). Pure."""

from __future__ import annotations

from collections.abc import Iterable


def answer_is_full(partitions: Iterable[tuple[int, int]], max_bytes: int) -> bool:
    """Whether an answer says the consumer is behind: a partition brought at least three quarters
    of its limit (``partitions``: (record bytes, limit) each), or all of them together three
    quarters of the answer's ``max_bytes``."""
    total = 0
    for size, limit in partitions:
        if size * 4 >= limit * 3:
            return True
        total += size
    return total * 4 >= max_bytes * 3
