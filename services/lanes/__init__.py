"""Lanes: a Kubernetes-native event streaming platform.

Subpackages: ``protocol`` (record batch codec, partitioner, names, error codes; pure),
``storage`` (log engine), ``broker``, ``controller``, ``coordinator`` (services),
``client`` (Producer, Consumer, Admin), ``cli`` (the ``lanes`` command), ``runtime`` (gRPC
server bootstrap, config, logging, metrics), ``v1`` (generated wire contract).
"""
