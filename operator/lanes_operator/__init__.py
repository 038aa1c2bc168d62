"""The Lanes operator for Topic and ConsumerGroup resources (docs/kubernetes.md).

Pure cores decide: ``topics`` (what to create, grow, set, remove or refuse for a Topic, and the
status to report), ``groups`` (when a ConsumerGroup's offset reset applies; how many replicas its
workload gets from its lag), ``conditions`` and ``settings``. The kopf handlers
(``topic_handlers``, ``group_handlers``) do the I/O through ``cluster`` and ``workloads``;
``main`` is what ``kopf run`` loads.
"""
