"""The Lanes operator for Topic and ConsumerGroup resources (issue #9).

Built so far, as pure cores: ``topics`` (what to create, grow, set, remove or refuse for a Topic,
and the status to report) and ``groups`` (when a ConsumerGroup's offset reset applies; how many
replicas its workload gets from its lag). The kopf handlers around them come next.
"""
