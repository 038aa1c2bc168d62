"""The Lanes operator for Topic and ConsumerGroup resources (issue #9).

Built so far: ``topics``, the pure decisions for a Topic (what to create, grow, set, remove or
refuse, and the status to report). The kopf handlers around it come next.
"""
