"""The log engine: segmented, indexed, crash-safe partition logs (issue #3; not built yet)."""
