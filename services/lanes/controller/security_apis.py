"""The Controller RPCs that keep users, ACLs and client quotas: part of the controller's gRPC face
(``lanes.controller.service.ControllerService`` inherits them: gRPC serves one class per service).
Who may call what is the server's guard's (``lanes.runtime.access.guard``); these keep the records.
Owned by the controller's event loop.
"""

from __future__ import annotations

import grpc

from lanes.controller.core import ControllerCore, ControllerDecision
from lanes.controller.quorum_controller import QuorumController
from lanes.errors import ErrorCode
from lanes.rpc.wire import ServicerContext, wire_error
from lanes.security.acls import AclBinding
from lanes.security.quota_entities import QuotaEntity
from lanes.v1 import common_pb2, controller_pb2, metadata_pb2


class SecurityApis:
    """SCRAM credentials, ACLs and client quotas (see the module docstring)."""

    controller: QuorumController
    _core: ControllerCore

    async def AlterUserScramCredentials(  # noqa: N802
        self, request: controller_pb2.AlterUserScramCredentialsRequest, context: ServicerContext
    ) -> controller_pb2.AlterUserScramCredentialsResponse:
        names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
        twice = {name for name in names if names.count(name) > 1}
        results = []
        for deletion in request.deletions:
            decision = (
                ControllerDecision.refuse(ErrorCode.DUPLICATE_RESOURCE, f"user {deletion.name!r} is named twice")
                if deletion.name in twice
                else await self.controller.write(
                    lambda d=deletion: self._core.remove_user_credential(d.name, d.mechanism)
                )
            )
            results.append(self._user_result(deletion.name, decision))
        for upsertion in request.upsertions:
            decision = (
                ControllerDecision.refuse(ErrorCode.DUPLICATE_RESOURCE, f"user {upsertion.name!r} is named twice")
                if upsertion.name in twice
                else await self.controller.write(
                    lambda u=upsertion: self._core.set_user_credential(
                        u.name, u.mechanism, u.iterations, u.salt, u.salted_password
                    )
                )
            )
            results.append(self._user_result(upsertion.name, decision))
        return controller_pb2.AlterUserScramCredentialsResponse(results=results)

    @staticmethod
    def _user_result(name: str, decision: ControllerDecision) -> controller_pb2.AlterUserScramCredentialsResult:
        return controller_pb2.AlterUserScramCredentialsResult(
            name=name[:140], error=wire_error(decision.error, decision.message)
        )

    async def DescribeUserScramCredentials(  # noqa: N802
        self, request: controller_pb2.DescribeUserScramCredentialsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeUserScramCredentialsResponse:
        stored = self.controller.image.scram_credentials
        names = list(request.names) or sorted(stored)
        users = []
        for name in names:
            credentials = stored.get(name)
            user = controller_pb2.UserScramCredentials(name=name[:140])
            if credentials is None:
                user.error.CopyFrom(wire_error(ErrorCode.RESOURCE_NOT_FOUND, f"user {name[:140]!r} has no credentials"))
            else:
                user.error.CopyFrom(wire_error(ErrorCode.NONE))
                user.credentials.extend(
                    controller_pb2.ScramCredentialInfo(mechanism=mechanism, iterations=credential.iterations)
                    for mechanism, credential in sorted(credentials.items())
                )
            users.append(user)
        return controller_pb2.DescribeUserScramCredentialsResponse(users=users)

    async def CreateAcls(  # noqa: N802
        self, request: controller_pb2.CreateAclsRequest, context: ServicerContext
    ) -> controller_pb2.CreateAclsResponse:
        bindings = [_acl_binding(binding) for binding in request.creations]
        _, decisions = await self.controller.write_with(
            lambda: _merged(self._core.create_acls([b for b in bindings if isinstance(b, AclBinding)]))
        )
        answers = iter(decisions)
        results = []
        for binding in bindings:
            decision = (
                next(answers)
                if isinstance(binding, AclBinding)
                else ControllerDecision.refuse(ErrorCode.INVALID_REQUEST, binding)
            )
            results.append(wire_error(decision.error, decision.message))
        return controller_pb2.CreateAclsResponse(results=results)

    async def DescribeAcls(  # noqa: N802
        self, request: controller_pb2.DescribeAclsRequest, context: ServicerContext
    ) -> controller_pb2.DescribeAclsResponse:
        filter_ = _acl_binding(request.filter)
        if not isinstance(filter_, AclBinding):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, filter_)
            raise AssertionError("abort raises")
        return controller_pb2.DescribeAclsResponse(
            acls=[acl.to_proto() for acl in sorted(self.controller.image.acls) if acl.matches(filter_)]
        )

    async def DeleteAcls(  # noqa: N802
        self, request: controller_pb2.DeleteAclsRequest, context: ServicerContext
    ) -> controller_pb2.DeleteAclsResponse:
        results = []
        for wire_filter in request.filters:
            filter_ = _acl_binding(wire_filter)
            if not isinstance(filter_, AclBinding):
                results.append(controller_pb2.DeleteAclsResult(error=wire_error(ErrorCode.INVALID_REQUEST, filter_)))
                continue
            decision = await self.controller.write(lambda f=filter_: self._core.delete_acls(f))
            results.append(
                controller_pb2.DeleteAclsResult(
                    error=wire_error(ErrorCode.NONE),
                    removed=[record.acl_removed.binding for record in decision.records],
                )
            )
        return controller_pb2.DeleteAclsResponse(results=results)

    async def AlterClientQuotas(  # noqa: N802
        self, request: controller_pb2.AlterClientQuotasRequest, context: ServicerContext
    ) -> controller_pb2.AlterClientQuotasResponse:
        results = []
        for change in request.changes:
            decision = await self.controller.write(
                lambda c=change: self._core.alter_client_quota(
                    QuotaEntity.from_proto(list(c.entity)), c.key, c.value if c.HasField("value") else None
                )
            )
            results.append(wire_error(decision.error, decision.message))
        return controller_pb2.AlterClientQuotasResponse(results=results)

    async def DescribeClientQuotas(  # noqa: N802
        self, request: controller_pb2.DescribeClientQuotasRequest, context: ServicerContext
    ) -> controller_pb2.DescribeClientQuotasResponse:
        wanted = QuotaEntity.from_proto(list(request.entity)) if request.entity else None
        quotas = [
            metadata_pb2.ClientQuotaRecord(entity=entity.to_proto(), key=key, value=rate)
            for entity, keyed in sorted(
                self.controller.image.client_quotas.items(), key=lambda item: item[0].sort_key()
            )
            if not request.entity or entity == wanted
            for key, rate in sorted(keyed.items())
        ]
        return controller_pb2.DescribeClientQuotasResponse(quotas=quotas)


def _merged(decisions: list[ControllerDecision]) -> tuple[ControllerDecision, list[ControllerDecision]]:
    """One write of several decisions' records, and the decisions (each answers one request part)."""
    return ControllerDecision([record for decision in decisions for record in decision.records]), decisions


def _acl_binding(wire: common_pb2.AclBinding) -> AclBinding | str:
    """The binding (or filter) a request names, or why it names none (an unknown enum value)."""
    try:
        return AclBinding.from_proto(wire)
    except ValueError as exc:
        return f"not an ACL this cluster knows: {exc}"
