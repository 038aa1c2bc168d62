"""The Lanes operator: ``kopf run -m lanes_operator.main --all-namespaces`` (the Helm chart adds
``--peering lanes-operator --liveness http://0.0.0.0:8080/healthz``).

Configuration comes from the environment (``lanes_operator.settings``): ``LANES_BOOTSTRAP`` names
the brokers. Kubernetes credentials are the pod's service account, or the current kubeconfig
context outside a cluster.

High availability: run several replicas with kopf peering. Each replica takes a random peering
priority (or ``LANES_OPERATOR_PRIORITY``); the one with the highest is active, the others pause
until its peering record expires (``LANES_OPERATOR_PEERING_LIFETIME_SECONDS``) and then the next
one takes over. Every reconciliation is idempotent, so a takeover in the middle of one is safe.
"""

from __future__ import annotations

import logging
import random
from typing import Any

import kopf

from lanes.aio import Admin
from lanes_operator import group_handlers, topic_handlers, user_handlers
from lanes_operator.context import SETTINGS, Context
from lanes_operator.metrics import OperatorMetrics
from lanes_operator.secrets import Secrets
from lanes_operator.workloads import Workloads, api_client

__all__ = ["group_handlers", "topic_handlers", "user_handlers"]

FINALIZER = "lanes.dev/finalizer"
#: How often kopf checks whether a timer told to stop (its object is being deleted) has ended.
TIMER_EXIT_POLL_S = 1.0
_log = logging.getLogger("lanes_operator")


@kopf.on.startup()
async def startup(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.persistence.finalizer = FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="lanes.dev")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="lanes.dev", key="last-handled-configuration"
    )
    settings.peering.priority = SETTINGS.peering_priority(random.Random())
    settings.peering.lifetime = SETTINGS.peering_lifetime_s
    settings.posting.level = logging.INFO
    # No cluster-wide discovery: the namespaces are the ones given (--namespace) or all of them
    # (--all-namespaces, which needs no listing), and the CRDs exist before the operator starts
    # (Helm installs crds/ first). So the chart's Role needs no cluster-wide list or watch of
    # namespaces or CRDs (with scanning on, kopf retried each refusal nine times at start-up).
    settings.scanning.disabled = True
    # A resync timer still running when its object is deleted is polled for its exit this often
    # (kopf's default, 60 s, held the finalizer, and so the deletion, a minute after the delete
    # handler had succeeded: nothing else wakes the object up).
    settings.background.cancellation_polling = TIMER_EXIT_POLL_S
    logging.getLogger("kopf.objects").addFilter(_QuietTimers())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # the liveness probe's requests
    metrics = OperatorMetrics()
    if SETTINGS.metrics_port >= 0:
        address = metrics.serve_http("0.0.0.0", SETTINGS.metrics_port)
        _log.info("metrics on http://%s/metrics", address)
    client = api_client()
    memo["lanes"] = Context(
        settings=SETTINGS,
        admin=Admin(SETTINGS.bootstrap, request_timeout_ms=SETTINGS.request_timeout_ms, client_id="lanes-operator"),
        workloads=Workloads(client),
        secrets=Secrets(client),
        metrics=metrics,
    )
    _log.info(
        "managing topics, groups and users of %s (peering priority %d)", SETTINGS.bootstrap, settings.peering.priority
    )


class _QuietTimers(logging.Filter):
    """Drops kopf's "Timer 'resync' succeeded" lines: one per resource every resync would drown
    the log. What a reconciliation changes is logged and posted as Events; failures still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (message.startswith("Timer ") and message.endswith(" succeeded."))


@kopf.on.cleanup()
async def cleanup(memo: kopf.Memo, **_: Any) -> None:
    context: Context | None = memo.get("lanes")
    if context is not None:
        await context.admin.close()
        context.workloads.close()
        context.metrics.stop()
