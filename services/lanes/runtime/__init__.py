"""Process plumbing shared by every service, one idea per package:

- ``serving``: the gRPC server bootstrap with health and reflection and its listeners, structured
  logs, the node's data directory;
- ``access``: who may call what (authentication and Kafka's ACLs over every RPC, bearer tokens);
- ``quotas``: what a caller may take (request-time quotas and the loop time they measure, limits
  per client address);
- ``link``: a broker's or coordinator's link to the controllers;
- below them: ``interceptors`` (what every call goes through), ``metrics`` (a service's
  metrics and its endpoint), ``broadcast`` (the wake-up primitive long-polls wait on).

RPC glue shared with clients is in ``lanes.rpc``; ``lanes up`` in ``lanes.local``."""
