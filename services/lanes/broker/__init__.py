"""The broker service: partition replicas on local disk (the log engine), produce and fetch,
leaders and followers with the ISR and high-water mark (``replication``, a pure core), idempotent
producers (``producer_state``, a pure core). ``python -m lanes.broker`` runs one."""
