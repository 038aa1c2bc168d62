"""The `lanes` command (issues #4 and #6; not built yet)."""
