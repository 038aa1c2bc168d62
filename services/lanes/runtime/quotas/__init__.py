"""What a caller may take: request-time quotas and the loop time they measure, limits per
client address (byte-rate quotas are the broker's, ``lanes.broker.byte_rate_quotas``)."""
