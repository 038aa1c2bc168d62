"""Who may do what: ACLs and their authorizer (``acls``), password credentials (``scram``), and
how much: client quotas (``quotas``).
Pure cores: the metadata image stores them, ``lanes.runtime.access.guard`` enforces them."""
