"""The data source's options naming the running test cluster's CA and admin user.

Spark's Python workers are forked by its JVM, whose environment was fixed when the first session
of the test process started (another module's cluster, or none): a query names the cluster's
files itself (``lanes_spark.options.ClusterAccess``), as a job names a mounted Secret's.
"""

from __future__ import annotations

import os


def access_options() -> dict[str, str]:
    """``tls.ca``, ``username`` and ``passwordFile`` from this process's environment (set while a
    secure test cluster runs: ``tests.integration.processes.clients_of``); empty for plaintext."""
    named = {
        "tls.ca": os.environ.get("LANES_TLS_CA"),
        "username": os.environ.get("LANES_USERNAME"),
        "passwordFile": os.environ.get("LANES_PASSWORD_FILE"),
    }
    return {key: value for key, value in named.items() if value}
