"""The controller service (issue #4; not built yet)."""
