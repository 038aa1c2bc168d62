"""The cluster metadata image: the state machine every node applies metadata records to.

Shared by the controller (from its metadata log), brokers and coordinators (from WatchMetadata).
"""
