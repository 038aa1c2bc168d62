"""Kafka's wire protocol: a second face of the broker's engine, for Kafka's own clients and tools
(decision 0040). Requests and responses are decoded and encoded with kio, generated from Kafka's
message schemas; each API maps onto the same engines the gRPC face uses."""
