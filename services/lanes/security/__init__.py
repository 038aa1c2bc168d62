"""Who may do what: ACLs and their authorizer (``acls``), password credentials (``scram``).
Pure cores: the metadata image stores them, ``lanes.runtime.guard`` enforces them."""
