"""Producer, Consumer and Admin clients (issue #4; not built yet)."""
