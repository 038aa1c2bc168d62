"""The group coordinator service (docs/consumer-groups.md): consumer groups and committed offsets.
The group state machine (``group``), its decisions (``core``) and the assignors are pure cores;
``shards`` loads and routes the shards of ``__consumer_offsets`` this coordinator owns;
``service`` is the gRPC face. ``python -m lanes.coordinator`` runs one."""
