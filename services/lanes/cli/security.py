"""``lanes users set-password|delete|list|issue-certificate``, ``lanes acls create|list|delete`` and ``lanes quotas
set|delete|list``: who may use the cluster, what each principal may do, and how fast (Kafka's
``kafka-configs --add-config SCRAM-...``, ``kafka-acls`` and ``kafka-configs --entity-type
users``). Users and ACLs need a cluster started with ``--auth required``; all of them a super user
(``lanes up`` makes ``admin`` one and gives its password to every ``lanes`` command through
cluster.json).

A password is read from ``--password-file``, else from standard input (never from the command
line, where ``ps`` shows it); it is salted on this machine: only its SCRAM keys reach the cluster.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

from lanes.cli.common import add_command, add_group, admin_for, emit, table
from lanes.cli.values import UsageError
from lanes.local.cluster import CLUSTER_FILE, LocalCluster
from lanes.metadata.image import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    PRODUCER_BYTE_RATE,
    QUOTA_KEYS,
    REQUEST_PERCENTAGE,
)
from lanes.security.acls import WILDCARD, AclBinding, Operation, PatternType, Permission, ResourceType
from lanes.security.quota_entities import DEFAULT, Part, QuotaEntity

_OPERATIONS = [op.name.lower().replace("_", "-") for op in Operation if op is not Operation.ANY]


def _password(options: argparse.Namespace) -> str:
    if options.password_file is not None:
        return Path(options.password_file).read_text().strip()
    if sys.stdin.isatty():
        first = getpass.getpass(f"password for {options.user}: ")
        if first != getpass.getpass("again: "):
            raise UsageError("the two passwords differ")
        return first
    return sys.stdin.readline().strip()


def set_password(options: argparse.Namespace) -> None:
    password = _password(options)
    if not password:
        raise UsageError("the password is empty")
    with admin_for(options) as admin:
        admin.set_user_password(options.user, password, mechanism=options.mechanism)
    emit(options, {"user": options.user, "mechanism": options.mechanism}, lambda d: f"password of {d['user']} set")


def delete_user(options: argparse.Namespace) -> None:
    with admin_for(options) as admin:
        admin.delete_user(options.user)
    emit(options, {"user": options.user}, lambda d: f"user {d['user']} deleted (its ACLs stay: lanes acls delete)")


def list_users(options: argparse.Namespace) -> None:
    with admin_for(options) as admin:
        users = admin.describe_users()
    document = [{"user": u.name, "mechanisms": list(u.mechanisms), "iterations": list(u.iterations)} for u in users]
    emit(
        options, document, lambda d: table([(u["user"], ", ".join(u["mechanisms"])) for u in d], ["user", "mechanisms"])
    )


def issue_certificate(options: argparse.Namespace) -> None:
    """A client certificate for a user of the certificate listeners of ``lanes up
    --certificate-listeners``, from the clients' CA in its data directory."""
    cluster_file = options.data_dir / CLUSTER_FILE
    described = json.loads(cluster_file.read_text()) if cluster_file.exists() else {}
    if "clients_ca" not in described:
        raise UsageError(
            f"no cluster with certificate listeners runs from {options.data_dir} (lanes up --certificate-listeners)"
        )
    cluster = LocalCluster(options.data_dir, certificate_listeners=True)
    try:
        issued = cluster.issue_user_certificate(options.user)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    document = {
        "user": options.user,
        "ca": str(issued.ca_file),
        "cert": str(issued.cert_file),
        "key": str(issued.key_file),
        "bootstrap": described["certificate_bootstrap"],
    }
    emit(
        options,
        document,
        lambda d: (
            f"certificate of {d['user']}: {d['cert']} (key {d['key']}); clients trust {d['ca']} and dial "
            f"{d['bootstrap']}\n  LANES_TLS_CA={d['ca']} LANES_TLS_CERT={d['cert']} LANES_TLS_KEY={d['key']}"
        ),
    )


def _resource(options: argparse.Namespace, *, for_filter: bool) -> tuple[ResourceType, str]:
    named = [
        (kind, name)
        for kind, name in (
            (ResourceType.TOPIC, options.topic),
            (ResourceType.GROUP, options.group),
            (ResourceType.TRANSACTIONAL_ID, options.transactional_id),
        )
        if name is not None
    ]
    if options.cluster:
        named.append((ResourceType.CLUSTER, "kafka-cluster"))
    if len(named) > 1 or (not named and not for_filter):
        raise UsageError("name one resource: --topic, --group, --transactional-id or --cluster")
    return named[0] if named else (ResourceType.ANY, "")


def _principal(name: str | None) -> str:
    if name is None:
        return ""
    return name if name.startswith("User:") else f"User:{name}"


def _filter(options: argparse.Namespace) -> AclBinding:
    resource_type, name = _resource(options, for_filter=True)
    return AclBinding(
        resource_type,
        name,
        PatternType.PREFIXED if options.prefixed else (PatternType.LITERAL if name else PatternType.ANY),
        _principal(options.principal),
        options.host or "",
        Operation[options.operation.upper().replace("-", "_")] if options.operation else Operation.ANY,
        Permission.DENY if options.deny else (Permission.ALLOW if options.allow else Permission.ANY),
    )


def _acl_document(acl: AclBinding) -> dict[str, Any]:
    return {
        "principal": acl.principal,
        "permission": acl.permission.name.lower(),
        "operation": acl.operation.name.lower().replace("_", "-"),
        "resource_type": acl.resource_type.name.lower(),
        "resource": acl.resource_name,
        "pattern": acl.pattern_type.name.lower(),
        "host": acl.host,
    }


def _render_acls(document: list[dict[str, Any]]) -> str:
    rows = [
        (a["principal"], a["permission"], a["operation"], a["resource_type"], a["resource"], a["pattern"], a["host"])
        for a in document
    ]
    return table(rows, ["principal", "permission", "operation", "type", "resource", "pattern", "host"])


def create_acls(options: argparse.Namespace) -> None:
    resource_type, name = _resource(options, for_filter=False)
    acls = [
        AclBinding(
            resource_type,
            name,
            PatternType.PREFIXED if options.prefixed else PatternType.LITERAL,
            _principal(options.principal),
            options.host or WILDCARD,
            Operation[operation.upper().replace("-", "_")],
            Permission.DENY if options.deny else Permission.ALLOW,
        )
        for operation in options.operation
    ]
    with admin_for(options) as admin:
        admin.create_acls(acls)
    emit(options, [_acl_document(a) for a in acls], _render_acls)


def list_acls(options: argparse.Namespace) -> None:
    with admin_for(options) as admin:
        acls = admin.describe_acls(_filter(options))
    emit(options, [_acl_document(a) for a in acls], _render_acls)


def delete_acls(options: argparse.Namespace) -> None:
    acl_filter = _filter(options)
    if acl_filter == AclBinding(ResourceType.ANY, "", PatternType.ANY, "", "", Operation.ANY, Permission.ANY) and not (
        options.all
    ):
        raise UsageError("this would delete every ACL: name what to delete, or give --all")
    with admin_for(options) as admin:
        removed = admin.delete_acls([acl_filter])
    emit(options, [_acl_document(a) for a in removed], _render_acls)


def _quota_entity(options: argparse.Namespace, *, required: bool = True) -> QuotaEntity:
    """The entity ``--user``/``--user-default`` and ``--client-id``/``--client-id-default`` name."""
    parts: list[Part] = []
    for name, default, flags in (
        (options.user, options.user_default, "--user USER or --user-default"),
        (options.client_id, options.client_id_default, "--client-id ID or --client-id-default"),
    ):
        if name is not None and default:
            raise UsageError(f"give one of {flags}, not both")
        parts.append(DEFAULT if default else name)
    entity = QuotaEntity(*parts)
    if required and (problem := entity.problem()) is not None:
        raise UsageError(f"{problem}: --user USER, --user-default, --client-id ID, --client-id-default")
    return entity


def set_quotas(options: argparse.Namespace) -> None:
    entity = _quota_entity(options)
    rates = {
        key: rate
        for key, rate in (
            (PRODUCER_BYTE_RATE, options.producer_byte_rate),
            (CONSUMER_BYTE_RATE, options.consumer_byte_rate),
            (REQUEST_PERCENTAGE, options.request_percentage),
            (CONTROLLER_MUTATION_RATE, options.controller_mutation_rate),
        )
        if rate is not None
    }
    if not rates:
        raise UsageError(
            "give --producer-byte-rate, --consumer-byte-rate, --request-percentage and/or --controller-mutation-rate"
        )
    with admin_for(options) as admin:
        for key, rate in rates.items():
            admin.set_quota(key, rate, user=entity.user, client_id=entity.client_id)
        quotas = admin.describe_quotas(user=entity.user, client_id=entity.client_id)
    emit(options, [_quota_document(q) for q in quotas], _render_quotas)


def delete_quotas(options: argparse.Namespace) -> None:
    entity = _quota_entity(options)
    with admin_for(options) as admin:
        for key in options.key:
            admin.set_quota(key, None, user=entity.user, client_id=entity.client_id)
        quotas = admin.describe_quotas(user=entity.user, client_id=entity.client_id)
    emit(options, [_quota_document(q) for q in quotas], _render_quotas)


def list_quotas(options: argparse.Namespace) -> None:
    entity = _quota_entity(options, required=False)
    with admin_for(options) as admin:
        quotas = admin.describe_quotas(user=entity.user, client_id=entity.client_id)
    emit(options, [_quota_document(q) for q in quotas], _render_quotas)


def _shown(part: Part) -> str | None:
    return "<default>" if part is DEFAULT else part


def _quota_document(quota: Any) -> dict[str, Any]:
    return {"user": _shown(quota.user), "client_id": _shown(quota.client_id), "key": quota.key, "rate": quota.rate}


def _render_quotas(document: list[dict[str, Any]]) -> str:
    rows = [(q["user"] or "", q["client_id"] or "", q["key"], f"{q['rate']:,.6g}") for q in document]
    return table(rows, ["user", "client id", "quota", "rate"])


def _quota_entity_options(parser: argparse.ArgumentParser, only: str) -> None:
    parser.add_argument("--user", metavar="USER", help=f"{only}this user's")
    parser.add_argument("--user-default", action="store_true", help=f"{only}the default for users")
    parser.add_argument("--client-id", metavar="ID", help=f"{only}this client id's (with --user: that user's)")
    parser.add_argument("--client-id-default", action="store_true", help=f"{only}the default for client ids")


def _positive_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number per second") from None
    if not 0 < rate < float("inf"):
        raise argparse.ArgumentTypeError("a rate is a positive number per second")
    return rate


def _resource_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", metavar="NAME", help="a topic ('*': every topic)")
    parser.add_argument("--group", metavar="ID", help="a consumer group ('*': every group)")
    parser.add_argument("--transactional-id", metavar="ID", help="a transactional id")
    parser.add_argument("--cluster", action="store_true", help="the cluster itself")
    parser.add_argument("--prefixed", action="store_true", help="the name is a prefix: every resource starting with it")
    parser.add_argument("--host", metavar="IP", help="the caller's IP address (default: any)")
    parser.add_argument("--deny", action="store_true", help="deny (a deny wins over every allow)")


def register(commands: Any) -> None:
    """Add ``users`` and ``acls`` to the ``lanes`` parser."""
    users = add_group(commands, "users", "create users, set their passwords, delete and list them")
    parser = add_command(
        users,
        "set-password",
        summary="create a user, or change its password (read from --password-file or standard input)",
        examples="""
lanes users set-password alice                              # asks twice
lanes users set-password alice --password-file alice.pass
printf '%s' "$PASSWORD" | lanes users set-password ci-bot""",
        run=set_password,
    )
    parser.add_argument("user", metavar="USER")
    parser.add_argument("--password-file", metavar="FILE", help="read the password from FILE")
    parser.add_argument(
        "--mechanism", choices=["SCRAM-SHA-256", "SCRAM-SHA-512"], default="SCRAM-SHA-256", help="default SCRAM-SHA-256"
    )
    parser = add_command(
        users, "delete", summary="delete a user's credentials", examples="lanes users delete alice", run=delete_user
    )
    parser.add_argument("user", metavar="USER")
    add_command(users, "list", summary="list users and their mechanisms", examples="lanes users list", run=list_users)
    parser = add_command(
        users,
        "issue-certificate",
        summary="issue a user a client certificate for the certificate listeners of lanes up --certificate-listeners",
        examples="""
lanes users issue-certificate alice        # then give alice ACLs: lanes acls create --principal alice ...""",
        run=issue_certificate,
    )
    parser.add_argument("user", metavar="USER")
    parser.add_argument(
        "--data-dir", type=Path, default=Path(".lanes"), help="the data directory of lanes up (default ./.lanes)"
    )

    acls = add_group(commands, "acls", "grant, list and revoke what principals may do (Kafka's ACLs)")
    parser = add_command(
        acls,
        "create",
        summary="allow (or with --deny, deny) a principal operations on a resource",
        examples="""
lanes acls create --principal alice --operation read --topic orders
lanes acls create --principal alice --operation read --group billing- --prefixed
lanes acls create --principal bob --operation write --operation describe --topic team- --prefixed
lanes acls create --principal bob --operation write --topic team-secret --deny""",
        run=create_acls,
    )
    parser.add_argument(
        "--principal", required=True, metavar="USER", help="a user ('alice' or 'User:alice'; 'User:*': all)"
    )
    parser.add_argument(
        "--operation",
        action="append",
        required=True,
        choices=_OPERATIONS,
        metavar="OP",
        help=f"repeatable: {', '.join(_OPERATIONS)}",
    )
    _resource_options(parser)
    for name, summary, run in (
        ("list", "list the ACLs matching what is named (nothing named: all)", list_acls),
        ("delete", "delete the ACLs matching what is named", delete_acls),
    ):
        parser = add_command(
            acls,
            name,
            summary=summary,
            examples=f"""
lanes acls {name} --principal alice
lanes acls {name} --topic orders --operation read""",
            run=run,
        )
        parser.add_argument("--principal", metavar="USER", help="only this principal's")
        parser.add_argument("--operation", choices=_OPERATIONS, metavar="OP", help="only this operation's")
        parser.add_argument("--allow", action="store_true", help="only ALLOW ACLs")
        _resource_options(parser)
        if name == "delete":
            parser.add_argument("--all", action="store_true", help="allow deleting every ACL")

    quotas = add_group(
        commands,
        "quotas",
        "bound what users and clients produce, fetch, take of a service and change per second (Kafka's quotas, "
        "KIP-599)",
    )
    parser = add_command(
        quotas,
        "set",
        summary="set the quotas of a user, a client id, or a user's client id (each may be the default): produce and "
        "fetch rates (bytes per second on each broker), request time (percent of one event loop, on each service "
        "process) and topic change rate (partitions created, added or deleted per second)",
        examples="""
lanes quotas set --user alice --producer-byte-rate 1048576
lanes quotas set --user-default --producer-byte-rate 10485760 --consumer-byte-rate 20971520
lanes quotas set --user alice --client-id reports --request-percentage 25
lanes quotas set --client-id-default --request-percentage 50
lanes quotas set --user-default --controller-mutation-rate 10""",
        run=set_quotas,
    )
    for flag in ("--producer-byte-rate", "--consumer-byte-rate"):
        parser.add_argument(flag, type=_positive_rate, metavar="BYTES", help="bytes per second on each broker")
    parser.add_argument(
        "--request-percentage",
        type=_positive_rate,
        metavar="PERCENT",
        help="percent of one event loop's time the calls may take on each service process (200: two loops' worth)",
    )
    parser.add_argument(
        "--controller-mutation-rate",
        type=_positive_rate,
        metavar="PARTITIONS",
        help="partitions created, added or deleted per second; over it, topic changes are refused for a while",
    )
    _quota_entity_options(parser, "")
    parser = add_command(
        quotas,
        "delete",
        summary="remove quotas of a user, a client id, or a user's client id",
        examples="lanes quotas delete --user alice --key producer_byte_rate",
        run=delete_quotas,
    )
    _quota_entity_options(parser, "")
    parser.add_argument("--key", action="append", required=True, choices=list(QUOTA_KEYS), help="repeatable")
    parser = add_command(quotas, "list", summary="list the quotas set", examples="lanes quotas list", run=list_quotas)
    _quota_entity_options(parser, "only ")
