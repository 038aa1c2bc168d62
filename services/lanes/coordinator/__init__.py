"""The group coordinator service (issue #5; not built yet)."""
