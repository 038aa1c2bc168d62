"""The topics a subscription pattern matches: resolved once per pattern and topic set, off the
coordinator's loop, never per heartbeat.

A member may subscribe by regular expression (KIP-848's ``SubscribedTopicRegex``: a full match,
internal topics excluded). Patterns are RE2 programs (linear time, ``subscription_pattern``), but
matching one against every topic still costs about 5 µs a topic through the binding: half a second
for 100,000 topics, which a heartbeat recomputing it for every member of its group would turn into
a stall of the whole coordinator. So, as Kafka's group coordinator does, patterns are resolved on
a worker thread and remembered:

- ``resolve_patterns(regexes, topics)`` is the matching itself: a pure function the service runs
  on its pattern thread;
- ``TopicPatterns`` remembers what each pattern matched for one *topic set*: the partition-count
  mapping the coordinator's shards hand out, compared by identity (``Shards.partition_counts``
  keeps one mapping object, never mutated, while the topics and their partition counts stay the
  same). A different mapping forgets every pattern. At most ``max_patterns`` are kept, the least
  recently used forgotten first.

A pattern that is not remembered when a decision needs it (the topics changed between the
service's resolution and the decision) is resolved there and then, on the loop: correct, and
rare. One ``TopicPatterns`` belongs to one shard's core and is used on the coordinator's event
loop only.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import re2

from lanes.protocol.names import is_internal_topic

#: Patterns one shard remembers (each with the topics it matched).
MAX_REMEMBERED_PATTERNS = 10_000

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.max_mem = 8 * 1024 * 1024  # a pattern whose program needs more is refused


@functools.lru_cache(maxsize=1_024)
def subscription_pattern(regex: str) -> Any:
    """A subscription's topic pattern, compiled by RE2 (linear-time matching: Python's ``re``
    backtracks, and ``(a+)+$`` would stall the coordinator for seconds per group). RE2
    has no backreferences or lookaround: such patterns are refused (``re2.error``), as Kafka's
    KIP-848 coordinator (RE2/J) does."""
    return re2.compile(regex, _RE2_OPTIONS)


def resolve_patterns(regexes: Iterable[str], topics: Iterable[str]) -> dict[str, frozenset[str]]:
    """``{regex: the topics it fully matches}``, internal topics left out; a pattern RE2 refuses
    matches nothing (heartbeats naming one are refused before they get here)."""
    names = [topic for topic in topics if not is_internal_topic(topic)]
    resolved: dict[str, frozenset[str]] = {}
    for regex in regexes:
        try:
            pattern = subscription_pattern(regex)
        except re2.error:
            resolved[regex] = frozenset()
            continue
        resolved[regex] = frozenset(filter(pattern.fullmatch, names))
    return resolved


class TopicPatterns:
    """What each subscription pattern matched in one topic set (see the module docstring)."""

    def __init__(self, max_patterns: int = MAX_REMEMBERED_PATTERNS) -> None:
        self.max_patterns = max_patterns
        self._topic_set: Mapping[str, int] | None = None
        self._matched: OrderedDict[str, frozenset[str]] = OrderedDict()

    def missing(self, regexes: Iterable[str], partition_counts: Mapping[str, int]) -> list[str]:
        """Those of ``regexes`` not resolved for ``partition_counts`` (each once, in order)."""
        known = self._matched if partition_counts is self._topic_set else {}
        return list(dict.fromkeys(regex for regex in regexes if regex and regex not in known))

    def remember(self, partition_counts: Mapping[str, int], resolved: Mapping[str, frozenset[str]]) -> None:
        """Keep ``resolved`` (computed for ``partition_counts``); a new topic set forgets the old."""
        if partition_counts is not self._topic_set:
            self._topic_set = partition_counts
            self._matched.clear()
        for regex, topics in resolved.items():
            self._matched[regex] = topics
            self._matched.move_to_end(regex)
        while len(self._matched) > self.max_patterns:
            self._matched.popitem(last=False)

    def matching(self, regex: str, partition_counts: Mapping[str, int]) -> frozenset[str]:
        """The topics of ``partition_counts`` that ``regex`` matches (resolved here if it must be)."""
        if partition_counts is self._topic_set:
            topics = self._matched.get(regex)
            if topics is not None:
                self._matched.move_to_end(regex)
                return topics
        resolved = resolve_patterns([regex], partition_counts)
        self.remember(partition_counts, resolved)
        return resolved[regex]
