"""RPC glue shared by the services and the client library: channels with Lanes' message-size
options (``channels``) and small conversions between wire messages and Python values (``wire``).

Nothing here is a server: the service bootstrap lives in ``lanes.runtime``.
"""
