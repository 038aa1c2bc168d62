"""The broker service (issue #4; not built yet)."""
