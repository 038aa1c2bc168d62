"""The controller's decisions on topic configs (Kafka's ``ConfigurationControlManager``): pure,
over the image it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lanes.controller.decisions import TOPIC, ConfigOp, ControllerDecision, MetadataRecord
from lanes.errors import ErrorCode, LanesError
from lanes.metadata.image import MetadataImage
from lanes.topic_configs import MIN_SEGMENT_BYTES, TOPIC_CONFIGS, parse_topic_configs
from lanes.v1 import metadata_pb2

#: configs of internal topics only the cluster sets (their groups' records must fit and stay)
INTERNAL_TOPIC_MANAGED_CONFIGS = frozenset(
    {"cleanup.policy", "max.message.bytes", "retention.ms", "retention.bytes", "min.insync.replicas", "segment.bytes"}
)


class ConfigControl:
    """Topic config overrides: validated as a whole, changed incrementally."""

    def __init__(self, image: Callable[[], MetadataImage], *, min_segment_bytes: int = MIN_SEGMENT_BYTES) -> None:
        self._image = image
        self.min_segment_bytes = min_segment_bytes

    def refusal(self, overrides: dict[str, str], changed: set[str] | None = None) -> ControllerDecision | None:
        """Why a topic may not have ``overrides``, if it may not: each must parse and keep its
        rule (``lanes.topic_configs``), and ``segment.bytes``, when set now (``changed``: the
        names being changed; None: all), is at least the cluster's ``min_segment_bytes`` (a
        topic made before the floor keeps its segments until they are changed)."""
        try:
            values = parse_topic_configs(overrides)
        except LanesError as exc:
            return ControllerDecision.refuse(exc.code, exc.message)
        if (changed is None or "segment.bytes" in changed) and values.get(
            "segment.bytes", self.min_segment_bytes
        ) < self.min_segment_bytes:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_CONFIG,
                f"segment.bytes={values['segment.bytes']} is invalid: must be at least {self.min_segment_bytes} "
                "(the controller's --min-segment-bytes)",
            )
        return None

    def alter_topic_configs(
        self, name: str, ops: Sequence[ConfigOp], *, validate_only: bool = False
    ) -> ControllerDecision:
        """Apply incremental config changes to a topic, all or none, validated as a whole. An
        internal topic's ``INTERNAL_TOPIC_MANAGED_CONFIGS`` are the cluster's: changing them would break
        every consumer group (``max.message.bytes=0`` on ``__consumer_offsets``)."""
        topic = self._image().topic(name)
        if topic is None:
            return ControllerDecision.refuse(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        managed = sorted({change.name for change in ops} & INTERNAL_TOPIC_MANAGED_CONFIGS) if topic.internal else []
        if managed:
            return ControllerDecision.refuse(
                ErrorCode.POLICY_VIOLATION,
                f"{name} is internal: the cluster manages its {', '.join(managed)}",
            )
        current = self._image().topic_configs(name)
        updated = dict(current)
        for change in ops:
            definition = TOPIC_CONFIGS.get(change.name)
            if definition is None:
                known = ", ".join(sorted(TOPIC_CONFIGS))
                return ControllerDecision.refuse(
                    ErrorCode.INVALID_CONFIG, f"unknown topic config {change.name!r}; known: {known}"
                )
            if change.op == "delete":
                updated.pop(change.name, None)
                continue
            if change.value is None:
                return ControllerDecision.refuse(
                    ErrorCode.INVALID_CONFIG, f"{change.op} of {change.name} needs a value"
                )
            if change.op == "set":
                updated[change.name] = change.value
            elif change.op in {"append", "subtract"}:
                if definition.type != "list":
                    return ControllerDecision.refuse(
                        ErrorCode.INVALID_CONFIG,
                        f"{change.op} works on list configs; {change.name} is a {definition.type}",
                    )
                items = list(definition.parse(updated.get(change.name, definition.render(definition.default))))
                values = [v.strip() for v in change.value.split(",") if v.strip()]
                items = (
                    items + [v for v in values if v not in items]
                    if change.op == "append"
                    else [v for v in items if v not in values]
                )
                updated[change.name] = ",".join(items)
            else:
                return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, f"unknown config operation {change.op!r}")
        refused = self.refusal(updated, {op.name for op in ops})
        if refused is not None:
            return refused
        if validate_only:
            return ControllerDecision()
        records = []
        for config_name in sorted(set(current) | set(updated)):
            if current.get(config_name) == updated.get(config_name):
                continue
            config = metadata_pb2.ConfigRecord(resource_type=TOPIC, resource_name=name, name=config_name)
            if config_name in updated:
                config.value = updated[config_name]
            records.append(MetadataRecord(config=config))
        return ControllerDecision(records)
