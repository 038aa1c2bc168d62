"""``lanes up``: a whole cluster as real local processes (``cluster.LocalCluster``), each service
started by ``processes.start_service`` and ready once it prints its JSON readiness line."""
