"""Kafka's ACL model and its authorizer, as a pure core.

An ACL (``AclBinding``) says that a principal (``User:alice``, or ``User:*`` for everyone),
calling from a host (an IP address, or ``*``), may (ALLOW) or may not (DENY) do an operation
on the resources a pattern matches: a literal name (``*`` for every resource of the type) or a
prefix. The ACLs live in the metadata log (``lanes.metadata.image``); every service decides
with the same ``Authorizer`` built from them.

Decision (Kafka's ``AclAuthorizer``/``StandardAuthorizer``):

1. a super user may do everything;
2. a matching DENY for the operation (or ALL) refuses, whatever allows it;
3. a matching ALLOW for the operation, for ALL, or for an operation that implies it (READ,
   WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows;
4. otherwise the answer is no (``allow.everyone.if.no.acl.found=false``).

An ``Authorizer`` is immutable: a change of ACLs builds a new one. Decisions are cached per
(principal, host, operation, resource) within it, the cache bounded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum

from lanes.v1 import common_pb2

#: The name of the one cluster resource (Kafka's).
CLUSTER_NAME = "kafka-cluster"
#: The literal name (and principal name) matching everything.
WILDCARD = "*"
#: The principal type every Lanes principal has.
USER_PREFIX = "User:"
#: The certificate (common) names of the cluster's own nodes: such a caller is that node.
NODE_NAME = re.compile(r"(broker|controller|coordinator)-[0-9]+")
#: Longest resource name, principal or host an ACL may name.
MAX_ACL_FIELD_CHARS = 512


class ResourceType(IntEnum):
    """What an ACL governs (``lanes.v1.AclResourceType``)."""

    ANY = common_pb2.ACL_RESOURCE_TYPE_UNSPECIFIED
    TOPIC = common_pb2.ACL_RESOURCE_TYPE_TOPIC
    GROUP = common_pb2.ACL_RESOURCE_TYPE_GROUP
    CLUSTER = common_pb2.ACL_RESOURCE_TYPE_CLUSTER
    TRANSACTIONAL_ID = common_pb2.ACL_RESOURCE_TYPE_TRANSACTIONAL_ID


class PatternType(IntEnum):
    """How an ACL's resource name matches (``lanes.v1.AclPatternType``)."""

    ANY = common_pb2.ACL_PATTERN_TYPE_UNSPECIFIED
    LITERAL = common_pb2.ACL_PATTERN_TYPE_LITERAL
    PREFIXED = common_pb2.ACL_PATTERN_TYPE_PREFIXED


class Operation(IntEnum):
    """What an ACL allows or denies (``lanes.v1.AclOperation``)."""

    ANY = common_pb2.ACL_OPERATION_UNSPECIFIED
    ALL = common_pb2.ACL_OPERATION_ALL
    READ = common_pb2.ACL_OPERATION_READ
    WRITE = common_pb2.ACL_OPERATION_WRITE
    CREATE = common_pb2.ACL_OPERATION_CREATE
    DELETE = common_pb2.ACL_OPERATION_DELETE
    ALTER = common_pb2.ACL_OPERATION_ALTER
    DESCRIBE = common_pb2.ACL_OPERATION_DESCRIBE
    CLUSTER_ACTION = common_pb2.ACL_OPERATION_CLUSTER_ACTION
    DESCRIBE_CONFIGS = common_pb2.ACL_OPERATION_DESCRIBE_CONFIGS
    ALTER_CONFIGS = common_pb2.ACL_OPERATION_ALTER_CONFIGS
    IDEMPOTENT_WRITE = common_pb2.ACL_OPERATION_IDEMPOTENT_WRITE


#: the operations a topic's authorized operations name (Kafka's, KIP-430)
TOPIC_OPERATIONS = (
    Operation.READ,
    Operation.WRITE,
    Operation.CREATE,
    Operation.DELETE,
    Operation.ALTER,
    Operation.DESCRIBE,
    Operation.DESCRIBE_CONFIGS,
    Operation.ALTER_CONFIGS,
)


class Permission(IntEnum):
    """Allow or deny (``lanes.v1.AclPermission``)."""

    ANY = common_pb2.ACL_PERMISSION_UNSPECIFIED
    DENY = common_pb2.ACL_PERMISSION_DENY
    ALLOW = common_pb2.ACL_PERMISSION_ALLOW


#: Operations an ALLOW of the key also allows (Kafka's implied operations).
_IMPLIED_BY: dict[Operation, frozenset[Operation]] = {
    Operation.DESCRIBE: frozenset({Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.ALTER_CONFIGS}),
}


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL; as a filter (``matches``), ANY and empty strings match anything."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: Operation
    permission: Permission

    @classmethod
    def from_proto(cls, binding: common_pb2.AclBinding) -> AclBinding:
        """The binding a wire message names; ValueError for an enum value this version lacks."""
        return cls(
            ResourceType(binding.resource_type),
            binding.resource_name,
            PatternType(binding.pattern_type),
            binding.principal,
            binding.host,
            Operation(binding.operation),
            Permission(binding.permission),
        )

    def to_proto(self) -> common_pb2.AclBinding:
        """The wire form."""
        return common_pb2.AclBinding(
            resource_type=self.resource_type.value,
            resource_name=self.resource_name,
            pattern_type=self.pattern_type.value,
            principal=self.principal,
            host=self.host,
            operation=self.operation.value,
            permission=self.permission.value,
        )

    @classmethod
    def of(
        cls,
        principal: str,
        operation: Operation | str,
        *,
        topic: str | None = None,
        group: str | None = None,
        transactional_id: str | None = None,
        cluster: bool = False,
        prefixed: bool = False,
        deny: bool = False,
        host: str = WILDCARD,
    ) -> AclBinding:
        """An ACL on one resource, by name: ``AclBinding.of("User:alice", "read", topic="a")``.
        ``principal`` without a type is a user's name; ``operation`` an Operation or its name."""
        named = [
            (t, n)
            for t, n in (
                (ResourceType.TOPIC, topic),
                (ResourceType.GROUP, group),
                (ResourceType.TRANSACTIONAL_ID, transactional_id),
            )
            if n is not None
        ]
        if cluster:
            named.append((ResourceType.CLUSTER, CLUSTER_NAME))
        if len(named) != 1:
            raise ValueError("an ACL names one resource: topic=, group=, transactional_id= or cluster=True")
        ((resource_type, name),) = named
        if isinstance(operation, str):
            try:
                operation = Operation[operation.upper().replace("-", "_")]
            except KeyError:
                known = ", ".join(o.name.lower() for o in Operation if o is not Operation.ANY)
                raise ValueError(f"unknown operation {operation!r}; known: {known}") from None
        return cls(
            resource_type,
            name,
            PatternType.PREFIXED if prefixed else PatternType.LITERAL,
            principal if principal.startswith(USER_PREFIX) else user_principal(principal),
            host,
            operation,
            Permission.DENY if deny else Permission.ALLOW,
        )

    def describe(self) -> str:
        """One line: ``User:alice ALLOW READ on topic 'a' (literal) from *``."""
        return (
            f"{self.principal} {self.permission.name} {self.operation.name} on {self.resource_type.name.lower()} "
            f"{self.resource_name!r} ({self.pattern_type.name.lower()}) from {self.host}"
        )

    def problem(self) -> str | None:
        """Why this binding cannot be stored (a field unset or out of shape); None when it can."""
        if self.resource_type is ResourceType.ANY or self.pattern_type is PatternType.ANY:
            return "an ACL names its resource type and pattern type"
        if self.operation is Operation.ANY or self.permission is Permission.ANY:
            return "an ACL names its operation and permission"
        if not self.resource_name or not self.host:
            return "an ACL names a resource (or '*') and a host (or '*')"
        if not self.principal.startswith(USER_PREFIX) or len(self.principal) == len(USER_PREFIX):
            return f"the principal must be 'User:<name>' or 'User:*', not {self.principal!r}"
        if max(len(self.resource_name), len(self.principal), len(self.host)) > MAX_ACL_FIELD_CHARS:
            return f"names in an ACL are at most {MAX_ACL_FIELD_CHARS} characters"
        if self.resource_type is ResourceType.CLUSTER and self.resource_name != CLUSTER_NAME:
            return f"the cluster resource is named {CLUSTER_NAME!r}"
        if self.pattern_type is PatternType.PREFIXED and self.resource_name == WILDCARD:
            return "a prefixed pattern names a prefix; use a literal '*' for every resource"
        return None

    def matches(self, filter_: AclBinding) -> bool:
        """Whether this binding is one that ``filter_`` selects (listing, deleting)."""
        return (
            filter_.resource_type in (ResourceType.ANY, self.resource_type)
            and filter_.resource_name in ("", self.resource_name)
            and filter_.pattern_type in (PatternType.ANY, self.pattern_type)
            and filter_.principal in ("", self.principal)
            and filter_.host in ("", self.host)
            and filter_.operation in (Operation.ANY, self.operation)
            and filter_.permission in (Permission.ANY, self.permission)
        )


def user_principal(name: str) -> str:
    """The principal of user ``name``."""
    return f"{USER_PREFIX}{name}"


#: Decisions one authorizer remembers before starting over.
_CACHE_ENTRIES = 65_536


class Authorizer:
    """Decides with a fixed set of ACLs and super users (see the module docstring)."""

    def __init__(self, acls: Iterable[AclBinding], super_users: Iterable[str] = ()) -> None:
        self.super_users = frozenset(super_users)
        self._literal: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefixed: dict[ResourceType, list[AclBinding]] = {}
        # Prefixed ACLs by (type, prefix), and the prefix lengths each type has: a name's
        # candidates are found by one lookup per distinct length (at most its length), not by
        # testing every prefixed ACL (thousands, with a prefix per tenant).
        self._by_prefix: dict[tuple[ResourceType, str], list[AclBinding]] = {}
        self._prefix_lengths: dict[ResourceType, list[int]] = {}
        for acl in acls:
            if acl.pattern_type is PatternType.PREFIXED:
                self._prefixed.setdefault(acl.resource_type, []).append(acl)
                self._by_prefix.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
            else:
                self._literal.setdefault((acl.resource_type, acl.resource_name), []).append(acl)
        for resource_type, listed in self._prefixed.items():
            self._prefix_lengths[resource_type] = sorted({len(acl.resource_name) for acl in listed})
        self._decided: dict[tuple[str, str, Operation, ResourceType, str], bool] = {}

    def _candidates(self, resource_type: ResourceType, name: str) -> Iterator[AclBinding]:
        yield from self._literal.get((resource_type, name), ())
        if name != WILDCARD:
            yield from self._literal.get((resource_type, WILDCARD), ())
        for length in self._prefix_lengths.get(resource_type, ()):
            if length > len(name):
                break
            yield from self._by_prefix.get((resource_type, name[:length]), ())

    def allows(self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        """Whether ``principal`` calling from ``host`` may do ``operation`` on the resource."""
        if principal in self.super_users:
            return True
        key = (principal, host, operation, resource_type, name)
        decided = self._decided.get(key)
        if decided is None:
            decided = self._decide(principal, host, operation, resource_type, name)
            self._remember(key, decided)
        return decided

    def _remember(self, key: tuple[str, str, Operation, ResourceType, str], decided: bool) -> None:
        """Keep a decision; beyond ``_CACHE_ENTRIES`` the oldest goes (a caller naming new
        resources without end pushes out old decisions one by one, never everyone's at once)."""
        if len(self._decided) >= _CACHE_ENTRIES:
            del self._decided[next(iter(self._decided))]
        self._decided[key] = decided

    def _decide(self, principal: str, host: str, operation: Operation, resource_type: ResourceType, name: str) -> bool:
        granting = {operation, Operation.ALL} | _IMPLIED_BY.get(operation, frozenset())
        allowed = False
        for acl in self._candidates(resource_type, name):
            if acl.principal not in (principal, f"{USER_PREFIX}{WILDCARD}") or acl.host not in (host, WILDCARD):
                continue
            if acl.permission is Permission.DENY and acl.operation in (operation, Operation.ALL):
                return False
            if acl.permission is Permission.ALLOW and acl.operation in granting:
                allowed = True
        return allowed

    def allows_any(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        """Whether some resource of the type allows ``principal`` the operation, DENYs weighed
        as Kafka's ``authorizeByResourceType`` weighs them (an idempotent producer needs WRITE on
        some topic): a DENY on the literal ``*`` refuses everything; else some ALLOW must name a
        literal resource no DENY covers (by its name, or a DENY prefix of it), a prefix no DENY
        prefix covers, or ``*``."""
        if principal in self.super_users:
            return True
        key = (principal, host, operation, resource_type, "\0any")  # no resource name holds a NUL
        decided = self._decided.get(key)
        if decided is None:
            decided = self._any_allowed(principal, host, operation, resource_type)
            self._remember(key, decided)
        return decided

    def _any_allowed(self, principal: str, host: str, operation: Operation, resource_type: ResourceType) -> bool:
        acls = [acl for (kind, _), listed in self._literal.items() if kind is resource_type for acl in listed]
        acls += self._prefixed.get(resource_type, [])
        applying = [
            acl
            for acl in acls
            if acl.principal in (principal, f"{USER_PREFIX}{WILDCARD}")
            and acl.host in (host, WILDCARD)
            and acl.operation in (operation, Operation.ALL)
        ]
        denied = [acl for acl in applying if acl.permission is Permission.DENY]
        if any(acl.pattern_type is PatternType.LITERAL and acl.resource_name == WILDCARD for acl in denied):
            return False
        denied_names = {acl.resource_name for acl in denied if acl.pattern_type is PatternType.LITERAL}
        denied_prefixes = [acl.resource_name for acl in denied if acl.pattern_type is PatternType.PREFIXED]
        for acl in applying:
            if acl.permission is not Permission.ALLOW:
                continue
            name = acl.resource_name
            if any(name.startswith(prefix) for prefix in denied_prefixes):
                continue
            if acl.pattern_type is PatternType.PREFIXED or name == WILDCARD or name not in denied_names:
                return True
        return False
