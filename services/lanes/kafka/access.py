"""What a Kafka request's caller may do, by the same rules as the gRPC face (``RULES`` of
``lanes.runtime.access.access_rules``: each Kafka API is authorized as the gRPC call that stands
for it), and what it is measured as for quotas.

``KafkaAccess.of`` gives a request's ``Access`` (None when everything passes: a cluster without
``--auth required``, or a super user); handlers ask it per topic as Kafka's ``KafkaApis`` does:
refused topics are answered TOPIC_AUTHORIZATION_FAILED per partition and the rest is served.

Owned by the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from lanes.metadata.image import MetadataImage
from lanes.runtime.access.access_rules import RULES, Access, Rule, method_name
from lanes.runtime.access.image_authorizer import ImageAuthorizer
from lanes.security.acls import Operation, ResourceType
from lanes.security.quota_entities import valid_client_id
from lanes.security.quotas import Limited


def broker_rule(name: str) -> Rule:
    """The rule of the broker's gRPC call ``name``, which a Kafka API is authorized as."""
    return RULES[method_name("Broker", name)]


def topic_operation(name: str) -> Operation:
    """The operation each topic of the broker's per-topic call ``name`` needs (Produce: WRITE...)."""
    operation = broker_rule(name).per_topic
    assert operation is not None, f"{name} is not authorized per topic"
    return operation


@dataclass(frozen=True)
class KafkaCaller:
    """Who makes a request: its principal, the host it comes from and the client id its header gives."""

    principal: str
    host: str
    client_id: str

    def quota(self, image: MetadataImage, key: str) -> Limited | None:
        """(what the caller is measured as, the rate) under quota ``key``, Kafka's precedence of
        user and client-id quotas; a client id that cannot name a quota entity counts as none."""
        client_id = self.client_id if valid_client_id(self.client_id) else ""
        return image.client_quota(self.principal.removeprefix("User:"), client_id, key)


class KafkaAccess:
    """ACLs of the metadata image, for callers of one listener (see the module docstring)."""

    def __init__(self, image: Callable[[], MetadataImage], super_users: Iterable[str], *, authorize: bool) -> None:
        self._image = image
        self._super_users = frozenset(super_users)
        self._authorize = authorize
        self._authorizer = ImageAuthorizer(image, self._super_users)

    def of(self, caller: KafkaCaller) -> Access | None:
        """The caller's access with the ACLs in force now; None when everything passes."""
        if not self._authorize or caller.principal in self._super_users:
            return None
        return Access(caller.principal, caller.host, self._authorizer.current(), self._image())


def allows(access: Access | None, operation: Operation, topic: str) -> bool:
    """Whether ``access`` may ``operation`` the topic (None: everything passes)."""
    return access is None or access.allows(operation, ResourceType.TOPIC, topic)
