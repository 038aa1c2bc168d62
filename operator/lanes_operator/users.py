"""What to do about one User resource: a pure core (no Kubernetes, no gRPC), fed the resource's
spec and what the cluster has for the principal, returning the changes to make. The kopf handlers
(``lanes_operator.user_handlers``) do the I/O around it.

Rules (docs/kubernetes.md, "Users"):

- the user's name is ``spec.userName`` or else ``metadata.name``; its principal ``User:<name>``;
- its password is a Secret's: one of the user's own (``spec.authentication.password``) or the
  one the operator generates and writes to the Secret named after the resource; the cluster gets
  it again whenever that Secret changes (its version is in the status), with the spec's SCRAM
  mechanism. A certificate user (``type: tls``) has no password: the operator writes its client
  certificate to that Secret (``lanes_operator.user_certificates``) and removes any SCRAM
  credential of the name;
- the principal's ACLs become exactly the spec's, and its user quotas exactly the spec's (the
  operator owns them: ACLs and quotas added by hand for that principal are removed);
- several User resources naming one user: the oldest manages it (as Topics, ``owner``);
- a user that exists and that the resource never managed is taken over only with the
  ``lanes.dev/adopt`` annotation; a managed user whose resource is no longer granted its name or
  ACLs (``lanes_operator.tenancy``) is revoked.

ACLs are described here as ``AclEntry`` (Kafka's names as text), so the core needs no wire code.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

#: What spec.authentication.type names, and the SCRAM mechanism each is; ``tls``: a client
#: certificate (``lanes_operator.user_certificates``), no password.
MECHANISMS = {"scram-sha-256": "SCRAM-SHA-256", "scram-sha-512": "SCRAM-SHA-512"}
TLS_AUTHENTICATION = "tls"
DEFAULT_AUTHENTICATION = "scram-sha-512"

#: spec.quotas' keys and the cluster's quota keys.
QUOTA_KEYS = {
    "producerByteRate": "producer_byte_rate",
    "consumerByteRate": "consumer_byte_rate",
    "requestPercentage": "request_percentage",
    "controllerMutationRate": "controller_mutation_rate",
}

#: The name an ACL on the cluster carries (Kafka's).
CLUSTER_NAME = "kafka-cluster"


class AclEntry(NamedTuple):
    """One ACL of the user: resource type (``topic``, ``group``, ``cluster``,
    ``transactionalId``), resource name, pattern (``literal``, ``prefix``), operation (``Read``,
    ...), host, and ``allow`` or ``deny``."""

    resource_type: str
    name: str
    pattern: str
    operation: str
    host: str
    permission: str


@dataclass(frozen=True)
class UserSpec:
    """The User resource's spec, with its defaults applied."""

    user_name: str
    mechanism: str | None  # the SCRAM mechanism; None: a certificate user (``tls``)
    password_ref: tuple[str, str] | None  # (Secret, key) of a password the user gave; None: generated
    acls: frozenset[AclEntry]
    quotas: Mapping[str, float]

    @classmethod
    def of(cls, name: str, spec: Mapping[str, Any]) -> UserSpec:
        """From ``metadata.name`` and the resource's ``spec`` (the CRD's schema checked its shape)."""
        authentication = spec.get("authentication") or {}
        reference = ((authentication.get("password") or {}).get("valueFrom") or {}).get("secretKeyRef")
        acls = set()
        for acl in (spec.get("authorization") or {}).get("acls") or ():
            resource = acl["resource"]
            resource_type = str(resource["type"])
            for operation in acl["operations"]:
                acls.add(
                    AclEntry(
                        resource_type,
                        CLUSTER_NAME if resource_type == "cluster" else str(resource["name"]),
                        str(resource.get("patternType") or "literal"),
                        str(operation),
                        str(acl.get("host") or "*"),
                        str(acl.get("type") or "allow"),
                    )
                )
        return cls(
            user_name=str(spec.get("userName") or name),
            mechanism=MECHANISMS.get(str(authentication.get("type") or DEFAULT_AUTHENTICATION)),
            password_ref=(str(reference["name"]), str(reference["key"])) if reference else None,
            acls=frozenset(acls),
            quotas={QUOTA_KEYS[k]: float(v) for k, v in (spec.get("quotas") or {}).items() if k in QUOTA_KEYS},
        )


@dataclass(frozen=True)
class UserPlan:
    """The changes that make the cluster's user what the spec says."""

    set_password: bool
    create_acls: tuple[AclEntry, ...]
    delete_acls: tuple[AclEntry, ...]
    set_quotas: Mapping[str, float | None]  # None removes
    #: SCRAM credentials to remove (after a password is set): another mechanism's, or every one
    #: of a certificate user
    delete_mechanisms: tuple[str, ...] = ()

    @property
    def changes(self) -> bool:
        return self.set_password or bool(
            self.create_acls or self.delete_acls or self.set_quotas or self.delete_mechanisms
        )


def plan(
    spec: UserSpec,
    *,
    credentials_version: str,
    applied_version: str | None,
    mechanisms: Iterable[str] | None,
    acls: Iterable[AclEntry],
    quotas: Mapping[str, float],
) -> UserPlan:
    """What to change: the password when the cluster lacks the user (``mechanisms`` None), has
    it under another mechanism (or several), or has another version of its Secret, and the other
    mechanisms' credentials (a certificate user: every one, it has no password); the ACLs and
    user quotas that differ from the spec's."""
    current = frozenset(acls)
    return UserPlan(
        set_password=spec.mechanism is not None
        and (mechanisms is None or set(mechanisms) != {spec.mechanism} or credentials_version != applied_version),
        delete_mechanisms=tuple(sorted(set(mechanisms or ()) - {spec.mechanism})),
        create_acls=tuple(sorted(spec.acls - current)),
        delete_acls=tuple(sorted(current - spec.acls)),
        set_quotas={
            **{key: rate for key, rate in spec.quotas.items() if quotas.get(key) != rate},
            **{key: None for key in quotas if key not in spec.quotas},
        },
    )


def describe(todo: UserPlan, user_name: str) -> list[tuple[str, str]]:
    """(reason, message) Events for the plan's changes."""
    events = []
    if todo.set_password:
        events.append(("PasswordSet", f"user {user_name}: password set from its Secret"))
    if todo.delete_mechanisms:
        events.append(("CredentialsRemoved", f"user {user_name}: {', '.join(todo.delete_mechanisms)} removed"))
    if todo.create_acls or todo.delete_acls:
        events.append(
            ("AclsChanged", f"user {user_name}: {len(todo.create_acls)} ACLs added, {len(todo.delete_acls)} removed")
        )
    if todo.set_quotas:
        changes = [f"{k}={'(removed)' if v is None else f'{v:g}'}" for k, v in sorted(todo.set_quotas.items())]
        events.append(("QuotasChanged", f"user {user_name}: " + ", ".join(changes)))
    return events
