"""The broker service (issue #4; in progress: the replication core exists, the service does not yet)."""
