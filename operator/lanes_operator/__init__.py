"""The kopf operator for Topic and ConsumerGroup resources (issue #9; not built yet)."""
