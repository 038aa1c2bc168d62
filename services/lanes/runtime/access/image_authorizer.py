"""The authorizer of the ACLs a service's metadata image holds now: rebuilt only when they change
(its remembered decisions live as long as the ACLs do), shared by the guard and by faces that
authorize on behalf of callers they no longer serve (a group's pattern subscriptions).

Owned by the service's event loop."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable

from lanes.metadata.image import MetadataImage
from lanes.security.acls import Authorizer, Operation, ResourceType

#: (principal, host, the topic set's identity) -> what of it the principal may DESCRIBE
_VISIBLE_REMEMBERED = 1_024


class ImageAuthorizer:
    """``current()`` is the authorizer of ``image()``'s ACLs (see the module docstring)."""

    def __init__(self, image: Callable[[], MetadataImage], super_users: Iterable[str] = ()) -> None:
        self._image = image
        self._super_users = frozenset(super_users)
        self._authorizer = Authorizer((), self._super_users)
        self._built_for: tuple[int, int] | None = None
        self._visible: OrderedDict[tuple[str, str, int], tuple[frozenset[str], frozenset[str]]] = OrderedDict()

    def current(self) -> Authorizer:
        """The authorizer of the ACLs in force."""
        image = self._image()
        key = (id(image), image.acls_offset)
        if key != self._built_for:
            self._authorizer = Authorizer(image.acls, self._super_users)
            self._built_for = key
            self._visible.clear()
        return self._authorizer

    def visible_topics(self, principal: str, host: str, topics: frozenset[str]) -> frozenset[str]:
        """Those of ``topics`` that ``principal`` calling from ``host`` may DESCRIBE; remembered
        per topic set (pattern matches are shared frozensets) until the ACLs change."""
        authorizer = self.current()
        key = (principal, host, id(topics))
        remembered = self._visible.get(key)
        if remembered is not None and remembered[0] is topics:
            self._visible.move_to_end(key)
            return remembered[1]
        visible = frozenset(
            topic
            for topic in topics
            if authorizer.allows(principal, host, Operation.DESCRIBE, ResourceType.TOPIC, topic)
        )
        self._visible[key] = (topics, visible)
        if len(self._visible) > _VISIBLE_REMEMBERED:
            self._visible.popitem(last=False)
        return visible
