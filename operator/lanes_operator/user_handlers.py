"""User resources, carried out on the Lanes cluster and in Secrets (the decisions are
``lanes_operator.users`` and ``lanes_operator.tenancy``).

One reconciliation, the same from every trigger (creation, change, operator start, and a timer
every ``LANES_OPERATOR_TOPIC_RESYNC_SECONDS`` that repairs changes made behind the operator's
back):

1. refused when the namespace may not claim the user's name or one of its ACLs' resources
   (Ready=False NotGranted), or when an older User names the same user (Conflict);
2. the password: from the user's own Secret (``spec.authentication.password``), or from the
   Secret named after the resource, which the operator creates with a random password (keys
   ``username`` and ``password``, owned by the User so Kubernetes deletes it with it). A Secret of
   that name the operator did not create is not used (SecretConflict). Whenever the Secret's
   version differs from the one the status records, or the cluster lacks the user, the password
   is set again (rotation: change the Secret's ``password``, or delete a generated Secret). A
   certificate user (``type: tls``) has a client certificate instead, issued from the clients'
   CA into that Secret (``user.crt``, ``user.key``, ``ca.crt``) and issued again when it must be
   (``lanes_operator.user_certificates``: missing, another user's, another CA's, near expiry);
   SCRAM credentials of its name are removed;
3. the principal's ACLs and user quotas are made exactly the spec's.

Deletion (the ``lanes.dev/finalizer`` finalizer): a managing, granted, unpaused User removes the
user's credentials, every ACL of its principal and its user quotas, and its generated Secret.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Any

import kopf

from lanes.errors import ErrorCode, LanesError, RetriableError
from lanes.security.acls import AclBinding, Operation, PatternType, Permission, ResourceType, user_principal
from lanes_operator.context import (
    ADOPT_ANNOTATION,
    SETTINGS,
    Context,
    context_of,
    object_lock,
    paused,
    reconcile_on_every_trigger,
)
from lanes_operator.outcome import RETRY_DELAY_S, Outcome
from lanes_operator.secrets import USER_LABEL, SecretUnreadableError, StoredSecret
from lanes_operator.tenancy import NOT_GRANTED
from lanes_operator.topics import Claim, claim_of, owner
from lanes_operator.user_certificates import (
    CA_KEY,
    CERTIFICATE_KEY,
    expiry,
    issue_user_certificate,
    renewal_reason,
)
from lanes_operator.users import AclEntry, UserSpec, describe, plan

USERS = ("lanes.dev", "v1alpha1", "users")
KIND = "User"

_TYPES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.CLUSTER,
    "transactionalId": ResourceType.TRANSACTIONAL_ID,
}
_PATTERNS = {"literal": PatternType.LITERAL, "prefix": PatternType.PREFIXED}
_PERMISSIONS = {"allow": Permission.ALLOW, "deny": Permission.DENY}


def _operation(name: str) -> Operation:
    """``DescribeConfigs`` -> Operation.DESCRIBE_CONFIGS."""
    return Operation["".join(f"_{c}" if c.isupper() else c for c in name).lstrip("_").upper()]


def binding(principal: str, entry: AclEntry) -> AclBinding:
    return AclBinding(
        _TYPES[entry.resource_type],
        entry.name,
        _PATTERNS[entry.pattern],
        principal,
        entry.host,
        _operation(entry.operation),
        _PERMISSIONS[entry.permission],
    )


def entry(acl: AclBinding) -> AclEntry:
    def name_of(mapping: dict[str, Any], value: Any) -> str:
        return next((k for k, v in mapping.items() if v == value), str(value))

    operation = "".join(part.capitalize() for part in acl.operation.name.split("_"))
    return AclEntry(
        name_of(_TYPES, acl.resource_type),
        acl.resource_name,
        name_of(_PATTERNS, acl.pattern_type),
        operation,
        acl.host,
        name_of(_PERMISSIONS, acl.permission),
    )


@kopf.index(*USERS)
def user_claims(*, name: str, namespace: str | None, spec: kopf.Spec, meta: kopf.Meta, **_: Any) -> dict[str, Claim]:
    """Which resources name which user (kopf keeps this index current from its watch); a resource
    whose namespace may not claim the name is none."""
    user_name = UserSpec.of(name, spec).user_name
    if SETTINGS.grants.refusal(namespace, "user", user_name) is not None:
        return {}
    return {user_name: claim_of(namespace, name, meta)}


def _refusal(context: Context, namespace: str | None, user: UserSpec) -> str | None:
    grants = context.settings.grants
    found = grants.refusal(namespace, "user", user.user_name)
    for acl in sorted(user.acls):
        found = found or grants.acl_refusal(namespace, acl.resource_type, acl.name)
    return found


def _manager_elsewhere(namespace: str | None, name: str, meta: kopf.Meta, claims: Any, user: UserSpec) -> Claim | None:
    manager = owner(claims.get(user.user_name, ()))
    this = claim_of(namespace, name, meta)
    return manager if manager is not None and manager != this else None


async def reconcile(
    *,
    body: kopf.Body,
    name: str,
    namespace: str | None,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    patch: kopf.Patch,
    memo: kopf.Memo,
    user_claims: kopf.Index[str, Claim],
    **_: Any,
) -> None:
    context = context_of(memo)
    async with object_lock(memo), Outcome(context, KIND, body=body, status=status, patch=patch, meta=meta) as outcome:
        user = UserSpec.of(name, spec)
        outcome.fields = {"userName": user.user_name}
        if paused(meta):
            outcome.ready("Unknown", "Paused", "reconciliation is paused: remove the lanes.dev/paused annotation")
            return
        managed = bool(status.get("credentialsVersion"))
        refusal = _refusal(context, namespace, user)
        if refusal is not None:
            if managed:  # the namespace lost its grant, or the spec asks for more than it may have
                await _revoke(context, user.user_name)
                outcome.events.append(("Revoked", f"user {user.user_name}: credentials, ACLs and quotas removed"))
            revoked = managed or bool(status.get("revoked"))  # by this pass, or by an earlier one
            outcome.fields = {"userName": user.user_name, "secret": None, "credentialsVersion": None, "acls": 0}
            outcome.fields["revoked"] = True if revoked else None
            outcome.ready(
                "False", NOT_GRANTED, refusal + ("; the user was revoked" if revoked else "; nothing changed")
            )
            return
        manager = _manager_elsewhere(namespace, name, meta, user_claims, user)
        if manager is not None:
            outcome.ready(
                "False",
                "Conflict",
                f"user {user.user_name} is managed by User {manager.namespace}/{manager.name}, which is older; "
                "this resource changes nothing. Delete it, or name another user.",
            )
            return
        mechanisms = await _mechanisms(context, user.user_name)
        adopt = str(meta.annotations.get(ADOPT_ANNOTATION, "")).lower() == "true"
        if mechanisms is not None and not managed and not adopt:
            outcome.ready(
                "False",
                "NotAdopted",
                f"user {user.user_name} exists and this resource did not make it: nothing changed. Annotate the "
                f'resource {ADOPT_ANNOTATION}: "true" to take it over (its password, ACLs and quotas become the '
                "spec's)",
            )
            return
        credentials = _certificate if user.mechanism is None else _password
        found = await credentials(context, namespace or "default", name, body=body, user=user, outcome=outcome)
        if found is None:
            return
        secret_name, stored = found
        if adopt:
            patch.metadata.annotations[ADOPT_ANNOTATION] = None
        principal = user_principal(user.user_name)
        current_acls = [entry(acl) for acl in await context.admin.describe_acls(_principal_filter(principal))]
        current_quotas = {q.key: q.rate for q in await context.admin.describe_quotas(user=user.user_name)}
        todo = plan(
            user,
            credentials_version=stored.version,
            applied_version=status.get("credentialsVersion"),
            mechanisms=mechanisms,
            acls=current_acls,
            quotas=current_quotas,
        )
        if todo.set_password:
            assert user.mechanism is not None
            await context.admin.set_user_password(user.user_name, stored.data["password"], mechanism=user.mechanism)
        if todo.delete_mechanisms:  # after the new one is set: the user can always log in
            await context.admin.delete_user(user.user_name, mechanisms=list(todo.delete_mechanisms))
        if todo.create_acls:  # before the removals: a changed ACL never leaves a gap in access
            await context.admin.create_acls([binding(principal, acl) for acl in todo.create_acls])
        if todo.delete_acls:
            await context.admin.delete_acls([binding(principal, acl) for acl in todo.delete_acls])
        for key, rate in sorted(todo.set_quotas.items()):
            await context.admin.set_quota(key, rate, user=user.user_name)
        outcome.events.extend(describe(todo, user.user_name))
        outcome.fields = {
            "userName": user.user_name,
            "secret": secret_name,
            "credentialsVersion": stored.version,
            "acls": len(user.acls),
            "revoked": None,
        }
        credential = (
            f"the password of Secret {secret_name}"
            if user.mechanism is not None
            else f"the certificate of Secret {secret_name} (until {expiry(stored.data[CERTIFICATE_KEY]):%Y-%m-%d} UTC)"
        )
        outcome.ready(
            "True",
            "Ready",
            f"user {user.user_name} has {credential}, {len(user.acls)} ACLs and {len(user.quotas)} quotas",
        )


async def _revoke(context: Context, user_name: str) -> None:
    """Remove the user's credentials, every ACL of its principal and its user quotas."""
    try:
        await context.admin.delete_user(user_name)
    except LanesError as exc:
        if exc.code != ErrorCode.RESOURCE_NOT_FOUND:
            raise
    await context.admin.delete_acls([_principal_filter(user_principal(user_name))])
    for quota in await context.admin.describe_quotas(user=user_name):
        await context.admin.set_quota(quota.key, None, user=user_name)


async def _mechanisms(context: Context, user_name: str) -> tuple[str, ...] | None:
    """The user's credentials' mechanisms; None when the cluster has no such user."""
    try:
        (found,) = await context.admin.describe_users([user_name])
    except LanesError as exc:
        if exc.code == ErrorCode.RESOURCE_NOT_FOUND:
            return None
        raise
    return found.mechanisms


def _principal_filter(principal: str) -> AclBinding:
    """Every ACL of ``principal``."""
    return AclBinding(ResourceType.ANY, "", PatternType.ANY, principal, "", Operation.ANY, Permission.ANY)


async def _password(
    context: Context, namespace: str, name: str, *, body: kopf.Body, user: UserSpec, outcome: Outcome
) -> tuple[str, StoredSecret] | None:
    """(Secret name, the Secret) holding the user's password, created when the operator
    generates it; None (the Ready condition says why) when there is none to use."""
    try:
        return await _password_secret(context, namespace, name, body=body, user=user, outcome=outcome)
    except SecretUnreadableError as exc:
        outcome.ready("False", "SecretInvalid", f"{exc}: write the password as text")
        return None


async def _password_secret(
    context: Context, namespace: str, name: str, *, body: kopf.Body, user: UserSpec, outcome: Outcome
) -> tuple[str, StoredSecret] | None:
    if user.password_ref is not None:
        secret_name, key = user.password_ref
        stored = await context.secrets.read(namespace, secret_name)
        if stored is None or not stored.data.get(key):
            outcome.ready("False", "SecretNotFound", f"Secret {secret_name} has no key {key!r} (spec.authentication)")
            return None
        return secret_name, StoredSecret({"password": stored.data[key]}, stored.version, stored.labels, ())
    owned = await _own_secret(
        context,
        namespace,
        name,
        body=body,
        outcome=outcome,
        holds="the generated password",
        otherwise=", or give the password (spec.authentication.password)",
    )
    if owned is None:
        return None
    stored = owned.stored
    if stored is None or not stored.data.get("password"):
        stored = await owned.replace({"username": user.user_name, "password": secrets.token_urlsafe(24)}, user)
        outcome.events.append(("SecretCreated", f"generated a password for user {user.user_name} in Secret {name}"))
    return name, stored


async def _certificate(
    context: Context, namespace: str, name: str, *, body: kopf.Body, user: UserSpec, outcome: Outcome
) -> tuple[str, StoredSecret] | None:
    """(Secret name, the Secret) holding a certificate user's client certificate, issued (again)
    when it must be (``lanes_operator.user_certificates``); None (the Ready condition says why)
    when there is none to use."""
    settings = context.settings
    if settings.clients_ca is None:
        outcome.ready(
            "False",
            "NoClientsCA",
            "certificate users need the clients' CA, and the operator has none (LANES_OPERATOR_CLIENTS_CA_CERT and "
            "LANES_OPERATOR_CLIENTS_CA_KEY; the chart's security.certificateListener)",
        )
        return None
    try:
        owned = await _own_secret(context, namespace, name, body=body, outcome=outcome, holds="the user's certificate")
    except SecretUnreadableError as exc:
        outcome.ready("False", "SecretInvalid", str(exc))
        return None
    if owned is None:
        return None
    ca_file, key_file = settings.clients_ca
    clients_ca = ca_file.read_bytes()
    now = datetime.datetime.now(datetime.UTC)
    held = owned.stored.data.get(CERTIFICATE_KEY) if owned.stored is not None else None
    reason = renewal_reason(held, user.user_name, clients_ca, now=now, renew_before=settings.renew_certificates_before)
    if reason is None and owned.stored is not None:
        return name, owned.stored
    issued = issue_user_certificate(
        clients_ca, key_file.read_bytes(), user.user_name, days=settings.user_certificate_days, now=now
    )
    cluster_ca = settings.cluster_ca.read_text() if settings.cluster_ca is not None else ""
    stored = await owned.replace({"username": user.user_name, CA_KEY: cluster_ca, **issued}, user)
    outcome.events.append(("CertificateIssued", f"user {user.user_name}: {reason}; a new one is in Secret {name}"))
    return name, stored


class _OwnedSecret:
    """The Secret named after a User, which the operator writes (``stored``: None while there is
    none); ``replace`` writes it whole, owned by the User (Kubernetes deletes it with it)."""

    def __init__(self, context: Context, namespace: str, name: str, uid: str, stored: StoredSecret | None) -> None:
        self._context, self._namespace, self._name, self._uid = context, namespace, name, uid
        self.stored = stored

    async def replace(self, data: dict[str, str], user: UserSpec) -> StoredSecret:
        if self.stored is not None:  # no update right: deleted and made again
            await self._context.secrets.delete(self._namespace, self._name)
        self.stored = await self._context.secrets.create(
            self._namespace,
            self._name,
            data,
            labels={USER_LABEL: user.user_name},
            owner={
                "apiVersion": "/".join(USERS[:2]),
                "kind": KIND,
                "name": self._name,
                "uid": self._uid,
                "controller": True,
                "blockOwnerDeletion": False,  # as Strimzi: needs no rights on users/finalizers
            },
        )
        return self.stored


async def _own_secret(
    context: Context, namespace: str, name: str, *, body: kopf.Body, outcome: Outcome, holds: str, otherwise: str = ""
) -> _OwnedSecret | None:
    """The User's own Secret (named after it); None, with Ready=False SecretConflict, when a
    Secret of that name is someone else's."""
    stored = await context.secrets.read(namespace, name)
    uid = str(body.get("metadata", {}).get("uid") or "")
    if stored is not None and uid not in stored.owner_uids:
        outcome.ready(
            "False",
            "SecretConflict",
            f"Secret {name} exists and is not this User's: the operator writes {holds} to a Secret named after the "
            f"User. Delete or rename that Secret{otherwise}",
        )
        return None
    return _OwnedSecret(context, namespace, name, uid, stored)


@kopf.on.delete(*USERS, id="delete")
async def user_deleted(**kwargs: Any) -> None:
    await delete(**kwargs)


async def delete(
    *,
    body: kopf.Body,
    name: str,
    namespace: str | None,
    spec: kopf.Spec,
    meta: kopf.Meta,
    status: kopf.Status,
    memo: kopf.Memo,
    user_claims: kopf.Index[str, Claim],
    **_: Any,
) -> None:
    context = context_of(memo)
    user = UserSpec.of(name, spec)
    async with object_lock(memo):
        if paused(meta):
            kopf.info(body, reason="Retained", message=f"paused: user {user.user_name} is kept")
            return
        if (
            not status.get("credentialsVersion")  # never made or took over the user (or revoked it)
            or context.settings.grants.refusal(namespace, "user", user.user_name) is not None
            or _manager_elsewhere(namespace, name, meta, user_claims, user)
        ):
            kopf.info(body, reason="Retained", message=f"user {user.user_name} is not this resource's; kept")
            return
        try:
            await _revoke(context, user.user_name)
        except RetriableError as exc:
            raise kopf.TemporaryError(f"cannot delete user {user.user_name} yet: {exc}", delay=RETRY_DELAY_S) from exc
        if user.password_ref is None:
            stored = await context.secrets.read(namespace or "default", name)
            if stored is not None and str(body.get("metadata", {}).get("uid") or "") in stored.owner_uids:
                await context.secrets.delete(namespace or "default", name)
        kopf.info(body, reason="Deleted", message=f"deleted user {user.user_name}, its ACLs and quotas")
        context.metrics.actions.labels(KIND, "Deleted").inc()


reconcile_on_every_trigger(USERS, reconcile, every_s=SETTINGS.topic_resync_s, timer_id="resync")
