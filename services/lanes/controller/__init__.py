"""The controller service: cluster metadata as a durable log (``metadata_log``), decisions as a
pure core (``core``, with ``placement``), and the gRPC shell that decides, appends, applies and
answers (``service``). ``python -m lanes.controller`` runs one."""
