"""Which names a namespace may claim (docs/kubernetes.md, tenancy), as a pure core.

When the operator watches namespaces beyond its own, a resource in another namespace may only
claim topics, groups and users whose names start with a prefix an administrator granted that
namespace (``LANES_OPERATOR_NAMESPACE_GRANTS``, the chart's ``operator.namespaceGrants``), and a
User there may only be given ACLs on resources under those prefixes (never on the cluster). The
operator's own namespace (``POD_NAMESPACE``, the release's) is the administrators': it claims
anything. Without a home namespace (the operator run by hand, outside a cluster) nothing is
restricted.

A resource refused here is reported ``Ready=False NotGranted`` and changes nothing in the
cluster, neither when reconciled nor when deleted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

NOT_GRANTED = "NotGranted"


@dataclass(frozen=True)
class Grants:
    """The home namespace (None: no restriction) and the prefixes granted to other namespaces."""

    home_namespace: str | None = None
    prefixes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def refusal(self, namespace: str | None, kind: str, name: str) -> str | None:
        """Why a resource in ``namespace`` may not claim the ``kind`` named ``name`` (None: it may)."""
        if self.home_namespace is None or (namespace or "") == self.home_namespace:
            return None
        granted = self.prefixes.get(namespace or "", ())
        if any(name.startswith(prefix) for prefix in granted):
            return None
        if not granted:
            return (
                f"namespace {namespace} is granted no names: an administrator grants it prefixes in the operator's "
                f"namespaceGrants (its own namespace, {self.home_namespace}, claims any)"
            )
        return (
            f"namespace {namespace} may claim {kind} names starting with {_listed(granted)}, not {name!r} "
            "(the operator's namespaceGrants)"
        )

    def acl_refusal(self, namespace: str | None, resource_type: str, name: str) -> str | None:
        """Why a User in ``namespace`` may not be given an ACL on the resource (a literal name, a
        prefix, or "*"); the cluster itself only from the home namespace."""
        if self.home_namespace is None or (namespace or "") == self.home_namespace:
            return None
        if resource_type == "cluster":
            return f"a User in namespace {namespace} gets no ACLs on the cluster (only in {self.home_namespace})"
        return self.refusal(namespace, f"{resource_type} ACL", name)


def _listed(prefixes: Sequence[str]) -> str:
    return " or ".join(repr(p) for p in prefixes)


def grants_of(home_namespace: str | None, granted: Mapping[str, object]) -> Grants:
    """Grants from the settings' parsed JSON (namespace -> list of prefixes). ValueError when a
    value is not a list of non-empty prefixes, when one namespace's prefix starts another's
    (``team-a`` would claim ``team-ab.``'s names), or when there are grants but no home namespace
    (they would silently not apply)."""
    prefixes: dict[str, tuple[str, ...]] = {}
    for namespace, listed in granted.items():
        if not isinstance(listed, list) or not all(isinstance(p, str) and p for p in listed):
            raise ValueError(f"the grant of namespace {namespace!r} is a list of non-empty prefixes")
        prefixes[str(namespace)] = tuple(listed)
    owners = [(prefix, namespace) for namespace, listed in prefixes.items() for prefix in listed]
    for prefix, namespace in owners:
        for other, other_namespace in owners:
            if other_namespace != namespace and other.startswith(prefix):
                raise ValueError(
                    f"namespace {namespace!r}'s prefix {prefix!r} also covers namespace {other_namespace!r}'s "
                    f"{other!r}: end prefixes with a separator (team-a.)"
                )
    if prefixes and not home_namespace:
        raise ValueError("namespace grants need the operator's own namespace (POD_NAMESPACE)")
    return Grants(home_namespace or None, prefixes)
