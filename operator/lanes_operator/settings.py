"""The operator's settings, from its environment (the Helm chart sets them; docs/kubernetes.md
lists them). Read once, when the handlers are registered: kopf fixes timer intervals then."""

from __future__ import annotations

import datetime
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lanes_operator.tenancy import Grants, grants_of


@dataclass(frozen=True)
class OperatorSettings:
    bootstrap: str  # LANES_BOOTSTRAP: host:port[,host:port...] of brokers
    topic_resync_s: float = 30.0  # LANES_OPERATOR_TOPIC_RESYNC_SECONDS: out-of-band changes are repaired this often
    group_interval_s: float = 10.0  # LANES_OPERATOR_GROUP_INTERVAL_SECONDS: group status, resets and autoscaling
    request_timeout_ms: int = 10_000  # LANES_OPERATOR_REQUEST_TIMEOUT_MS: each request to the Lanes cluster
    metrics_port: int = 9404  # LANES_OPERATOR_METRICS_PORT: /metrics (-1: none)
    priority: int | None = None  # LANES_OPERATOR_PRIORITY: peering priority (default: random per process)
    peering_lifetime_s: int = 20  # LANES_OPERATOR_PEERING_LIFETIME_SECONDS: a silent replica is gone after this
    # POD_NAMESPACE (the operator's own) and LANES_OPERATOR_NAMESPACE_GRANTS (JSON: namespace ->
    # list of name prefixes): what other namespaces may claim (lanes_operator.tenancy)
    grants: Grants = field(default_factory=Grants)
    # LANES_OPERATOR_CLIENTS_CA_CERT and LANES_OPERATOR_CLIENTS_CA_KEY: the clients' CA (PEM files)
    # that signs certificate users' certificates; without them, certificate users are refused
    clients_ca: tuple[Path, Path] | None = None
    # LANES_TLS_CA: the cluster's CA, written beside a certificate user's certificate (ca.crt)
    cluster_ca: Path | None = None
    # LANES_OPERATOR_USER_CERTIFICATE_DAYS: how long a user's certificate is valid; it is issued
    # again when a third of that (at most 30 days) is left
    user_certificate_days: int = 365

    @property
    def renew_certificates_before(self) -> datetime.timedelta:
        """How long before its expiry a user's certificate is issued again."""
        return min(datetime.timedelta(days=30), datetime.timedelta(days=self.user_certificate_days) / 3)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OperatorSettings:
        """Settings from ``env``; ValueError naming the variable when a value is unusable."""

        def number(name: str, default: float, kind: type[float] | type[int] = float) -> float:
            raw = env.get(name, "").strip()
            if not raw:
                return default
            try:
                value = kind(raw)
            except ValueError:
                raise ValueError(f"{name}={raw!r} is not a number") from None
            return value

        bootstrap = env.get("LANES_BOOTSTRAP", "127.0.0.1:9093").strip()
        if not bootstrap:
            raise ValueError("LANES_BOOTSTRAP is empty: set it to the brokers' host:port list")
        priority = env.get("LANES_OPERATOR_PRIORITY", "").strip()
        try:
            granted = json.loads(env.get("LANES_OPERATOR_NAMESPACE_GRANTS", "").strip() or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"LANES_OPERATOR_NAMESPACE_GRANTS is not JSON: {exc}") from None
        if not isinstance(granted, dict):
            raise ValueError("LANES_OPERATOR_NAMESPACE_GRANTS is a JSON object: namespace -> list of prefixes")
        settings = cls(
            bootstrap=bootstrap,
            topic_resync_s=number("LANES_OPERATOR_TOPIC_RESYNC_SECONDS", cls.topic_resync_s),
            group_interval_s=number("LANES_OPERATOR_GROUP_INTERVAL_SECONDS", cls.group_interval_s),
            request_timeout_ms=int(number("LANES_OPERATOR_REQUEST_TIMEOUT_MS", cls.request_timeout_ms, int)),
            metrics_port=int(number("LANES_OPERATOR_METRICS_PORT", cls.metrics_port, int)),
            priority=int(number("LANES_OPERATOR_PRIORITY", 0, int)) if priority else None,
            peering_lifetime_s=int(number("LANES_OPERATOR_PEERING_LIFETIME_SECONDS", cls.peering_lifetime_s, int)),
            grants=grants_of(env.get("POD_NAMESPACE", "").strip() or None, granted),
            clients_ca=_clients_ca(env),
            cluster_ca=Path(env["LANES_TLS_CA"]) if env.get("LANES_TLS_CA", "").strip() else None,
            user_certificate_days=int(number("LANES_OPERATOR_USER_CERTIFICATE_DAYS", cls.user_certificate_days, int)),
        )
        for name, value in (
            ("LANES_OPERATOR_TOPIC_RESYNC_SECONDS", settings.topic_resync_s),
            ("LANES_OPERATOR_GROUP_INTERVAL_SECONDS", settings.group_interval_s),
            ("LANES_OPERATOR_REQUEST_TIMEOUT_MS", settings.request_timeout_ms),
            ("LANES_OPERATOR_USER_CERTIFICATE_DAYS", settings.user_certificate_days),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be above 0")
        return settings

    def peering_priority(self, rng: random.Random) -> int:
        """This replica's peering priority: the configured one, or a random one, so that among
        the replicas of one Deployment exactly one (the highest) is active and the others wait."""
        return self.priority if self.priority is not None else rng.randrange(1, 2**31)


def _clients_ca(env: Mapping[str, str]) -> tuple[Path, Path] | None:
    """The clients' CA's certificate and key files, or None; ValueError when only one is set."""
    cert = env.get("LANES_OPERATOR_CLIENTS_CA_CERT", "").strip()
    key = env.get("LANES_OPERATOR_CLIENTS_CA_KEY", "").strip()
    if bool(cert) != bool(key):
        raise ValueError("LANES_OPERATOR_CLIENTS_CA_CERT and LANES_OPERATOR_CLIENTS_CA_KEY are set together")
    return (Path(cert), Path(key)) if cert else None
