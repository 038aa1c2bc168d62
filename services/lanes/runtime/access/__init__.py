"""Who may call what: authentication (TLS identities, SCRAM, OAuth bearer tokens) and Kafka's
ACLs over every RPC (``lanes.runtime.access.guard``, the rules in ``access_rules``)."""
