"""The broker service: partition leaders over the log engine (replication between brokers in progress, issue #4)."""
