"""Shared test settings.

- Benchmarks (tests/perf) are collected only under `make bench` (LANES_BENCH=1), never by a
  plain `pytest` or `make test`: they print numbers and take time.
- Hypothesis prints a reproduction blob for every failure.
- Services the tests start by hand serve no metrics endpoint (``LANES_METRICS_PORT=-1``): their
  default ports would collide, and a free port picked by the kernel could take a port another
  service of the same test is about to bind. ``LocalCluster`` (``lanes up``) gives each process
  an explicit metrics port, so cluster tests scrape for real.
"""

import os

from hypothesis import HealthCheck, settings

collect_ignore = [] if os.environ.get("LANES_BENCH") else ["perf"]
os.environ.setdefault("LANES_METRICS_PORT", "-1")

settings.register_profile(
    "lanes",
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lanes")
