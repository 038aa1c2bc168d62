"""The controller's decisions on users, ACLs and client quotas (Kafka's ``ScramControlManager``,
``AclControlManager`` and ``ClientQuotaControlManager``): pure, over the image it is given."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lanes.controller.decisions import ControllerDecision, MetadataRecord
from lanes.errors import ErrorCode
from lanes.metadata.image import QUOTA_KEYS, MetadataImage, credential_record
from lanes.security import scram
from lanes.security.acls import NODE_NAME, AclBinding
from lanes.security.quota_entities import QuotaEntity
from lanes.v1 import metadata_pb2

#: the most ACLs, and users with credentials, the metadata log holds (each is in every snapshot)
MAX_ACLS = 100_000
MAX_USERS = 100_000
#: the most quota entities (users, client ids and pairs) it holds
MAX_QUOTA_ENTITIES = 100_000


class SecurityControl:
    """Users' credentials, ACLs and client quotas."""

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    def bootstrap_users(self, users: Sequence[tuple[str, scram.ScramCredential]]) -> ControllerDecision:
        """Credentials for users that have none yet (the first administrator of a new cluster,
        Kafka's ``kafka-storage format --add-scram``); existing ones are never replaced."""
        return ControllerDecision(
            [credential_record(name, stored) for name, stored in users if name not in self._image().scram_credentials]
        )

    def set_user_credential(
        self, name: str, mechanism: str, iterations: int, salt: bytes, salted_password: bytes
    ) -> ControllerDecision:
        """Create or replace ``name``'s credential of ``mechanism`` from a salted password (the
        password itself never reaches the controller)."""
        problem = scram.credential_problem(name, mechanism, iterations, salt)
        if problem is None and NODE_NAME.fullmatch(name):
            problem = f"{name!r} is a node's name: a user may not take it"
        if problem is not None:
            code = (
                ErrorCode.UNSUPPORTED_SASL_MECHANISM
                if mechanism not in scram.MECHANISMS
                else (ErrorCode.UNACCEPTABLE_CREDENTIAL)
            )
            return ControllerDecision.refuse(code, problem)
        expected = scram.salted_password_bytes(mechanism)
        if len(salted_password) != expected:
            return ControllerDecision.refuse(
                ErrorCode.UNACCEPTABLE_CREDENTIAL, f"a {mechanism} salted password is {expected} bytes"
            )
        if name not in self._image().scram_credentials and len(self._image().scram_credentials) >= MAX_USERS:
            return ControllerDecision.refuse(ErrorCode.POLICY_VIOLATION, f"the cluster holds at most {MAX_USERS} users")
        return ControllerDecision(
            [credential_record(name, scram.credential(mechanism, salt, iterations, salted_password))]
        )

    def remove_user_credential(self, name: str, mechanism: str) -> ControllerDecision:
        """Remove ``name``'s credential of ``mechanism`` (RESOURCE_NOT_FOUND when it has none)."""
        if mechanism not in self._image().scram_credentials.get(name, {}):
            return ControllerDecision.refuse(
                ErrorCode.RESOURCE_NOT_FOUND, f"user {name[:140]!r} has no {mechanism[:40]} credential"
            )
        removed = metadata_pb2.UserScramCredentialRemovedRecord(name=name, mechanism=mechanism)
        return ControllerDecision([MetadataRecord(user_scram_credential_removed=removed)])

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[ControllerDecision]:
        """One decision per binding: refused when malformed, nothing to write when present."""
        decisions = []
        added: set[AclBinding] = set()
        for binding in bindings:
            problem = binding.problem()
            if problem is not None:
                decisions.append(ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, problem))
            elif binding in self._image().acls or binding in added:
                decisions.append(ControllerDecision())
            elif len(self._image().acls) + len(added) >= MAX_ACLS:
                decisions.append(
                    ControllerDecision.refuse(ErrorCode.POLICY_VIOLATION, f"the cluster holds at most {MAX_ACLS} ACLs")
                )
            else:
                added.add(binding)
                decisions.append(
                    ControllerDecision([MetadataRecord(acl=metadata_pb2.AclRecord(binding=binding.to_proto()))])
                )
        return decisions

    def alter_client_quota(self, entity: QuotaEntity | None, key: str, value: float | None) -> ControllerDecision:
        """Set (a positive rate) or remove (None) ``entity``'s quota under ``key`` (None: the
        request named no valid entity)."""
        if key not in QUOTA_KEYS:
            return ControllerDecision.refuse(
                ErrorCode.INVALID_REQUEST, f"unknown quota {key[:60]!r}; known: {', '.join(QUOTA_KEYS)}"
            )
        problem = "a quota's entity has one user part, one client-id part, or one of each" if entity is None else None
        if entity is not None:
            problem = entity.problem()
        if problem is not None:
            return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, problem)
        assert entity is not None
        if value is not None and not (0 < value < float("inf")):
            return ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, f"a {key} is a positive number per second")
        if entity not in self._image().client_quotas and len(self._image().client_quotas) >= MAX_QUOTA_ENTITIES:
            return ControllerDecision.refuse(
                ErrorCode.POLICY_VIOLATION, f"the cluster holds quotas for at most {MAX_QUOTA_ENTITIES} entities"
            )
        record = metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=value)
        return ControllerDecision([MetadataRecord(client_quota=record)])

    def delete_acls(self, filter_: AclBinding) -> ControllerDecision:
        """Remove every ACL ``filter_`` matches (their records say which)."""
        return ControllerDecision(
            [
                MetadataRecord(acl_removed=metadata_pb2.AclRemovedRecord(binding=acl.to_proto()))
                for acl in sorted(self._image().acls)
                if acl.matches(filter_)
            ]
        )
