"""Serving a node: the gRPC server bootstrap with its listeners (``server``), structured logs,
the node's data directory."""
