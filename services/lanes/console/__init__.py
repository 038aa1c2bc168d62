"""Lanes Console: the web UI (``lanes console``; ``lanes up`` starts one).

Pages for the cluster, topics, messages (searched on the brokers), consumer groups; every view
and action made with the logged-in user's own credentials through the public client library
(``lanes.aio``), so the cluster's ACLs decide. See docs/console.md and decision 0039.
"""
