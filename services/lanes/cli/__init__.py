"""The ``lanes`` command: ``lanes NOUN VERB`` for topics, produce/consume, groups, the cluster
and ``lanes up``/``down`` (docs/cli.md; conventions in docs/decisions/0015)."""
