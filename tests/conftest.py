"""Shared test settings.

- Benchmarks (tests/perf) are collected only under `make bench` (LANES_BENCH=1), never by a
  plain `pytest` or `make test`: they print numbers and take time.
- Hypothesis prints a reproduction blob for every failure.
"""

import os

from hypothesis import HealthCheck, settings

collect_ignore = [] if os.environ.get("LANES_BENCH") else ["perf"]

settings.register_profile(
    "lanes",
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lanes")
