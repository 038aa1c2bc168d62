"""Process plumbing shared by every service: the gRPC server bootstrap with health and reflection
(``server``), structured logs (``logs``), the metrics endpoint (``metrics``), a wake-up primitive
for long-polls (``broadcast``) and a broker's or coordinator's link to the controller
(``controller_link``). RPC glue shared with clients is in ``lanes.rpc``; ``lanes up`` in
``lanes.local``."""
