"""When a ``FetchStream`` reads on (decision 0050): one rule, applied by the broker to decide
whether to read the next answer (``ConsumerFetch.read_on``) and by the consumer to know the
stream ends at this one (``Fetcher._fetch_from``); and how long a stream that follows (a
caught-up consumer's, decision 0052) goes on long-polling. Pure."""

from __future__ import annotations

from collections.abc import Iterable

#: A following stream long-polls again only while it is younger than this; the consumer's
#: deadline for the call is this plus a request's time (its last long-poll and answer), so the
#: broker lets go of a call whose consumer vanished without a word.
FOLLOW_FOR_S = 30.0
#: A following stream long-polls again only after an answer of at most this many record bytes:
#: the broker holds the last answer's fetch memory while it waits (decision 0050), and a larger
#: answer means records come faster than a long-poll is worth (the next call starts at once).
FOLLOW_AFTER_BYTES_AT_MOST = 1024 * 1024


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
