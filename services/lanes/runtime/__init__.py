"""Process plumbing shared by every service: gRPC server bootstrap, health, reflection."""
