"""Shared test settings: hypothesis prints a reproduction blob for every failure."""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "lanes",
    print_blob=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("lanes")
