"""What every `lanes` command shares: where the cluster is, how results are printed, and how
errors become one line and an exit code.

Bootstrap, first found wins: ``--bootstrap``, ``$LANES_BOOTSTRAP``, the ``bootstrap`` of
``./.lanes/cluster.json`` (written by ``lanes up``), ``localhost:9092``. TLS files, likewise:
``$LANES_TLS_CA`` (with ``$LANES_TLS_CERT``, ``$LANES_TLS_KEY``), the ``tls`` of cluster.json,
else plaintext. A username and password, likewise: ``$LANES_USERNAME`` with ``$LANES_PASSWORD``
(or ``$LANES_PASSWORD_FILE``), else a bearer token in ``$LANES_TOKEN_FILE``, the ``user`` of
cluster.json (its ``password_file``), else none.

Exit codes (documented in the README's CLI reference):

====  =====================================================================
0     success
1     the cluster refused the request (invalid name, config, state...)
2     bad usage (unknown flag, missing argument, bad flag value)
3     not found (unknown topic, partition or group)
4     the cluster is unreachable or did not answer in time
70    a bug in Lanes (run again with --debug for the traceback)
130   interrupted (Ctrl-C)
====  =====================================================================
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from lanes.cli.values import UsageError
from lanes.client.admin import Admin
from lanes.errors import ErrorCode, LanesError, UnknownTopicOrPartitionError
from lanes.rpc.credentials import Credentials, UserPassword, client_credentials
from lanes.rpc.tls import TlsFiles

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_NOT_FOUND = 3
EXIT_UNAVAILABLE = 4
EXIT_BUG = 70
EXIT_INTERRUPTED = 130
DEFAULT_BOOTSTRAP = "localhost:9092"
CLUSTER_FILE = Path(".lanes") / "cluster.json"
REQUEST_TIMEOUT_MS = 15_000
_NOT_FOUND = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_ID}
_UNAVAILABLE = {
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.BROKER_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_CONTROLLER,
}
# What to do next, in CLI terms, for errors whose server message says only what went wrong.
CLI_HINTS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "list topics with: lanes topics list",
    ErrorCode.TOPIC_ALREADY_EXISTS: "see it with: lanes topics describe NAME (or pass --if-not-exists)",
    ErrorCode.GROUP_ID_NOT_FOUND: "list groups with: lanes groups list",
    ErrorCode.NON_EMPTY_GROUP: "stop the group's consumers first, or add --wait to wait until they leave",
    ErrorCode.INVALID_CONFIG: "every topic config and its meaning: lanes configs describe topic NAME",
}
Command = Callable[[argparse.Namespace], int | None]


class NotFoundError(Exception):
    """Something the command needs does not exist (exit 3); the message says what to do."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors that point at ``--help``."""

    def error(self, message: str) -> NoReturn:
        """Print ``lanes topics create: <message> (see lanes topics create --help)`` and exit 2."""
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def resolve_bootstrap(flag: str | None, cluster_file: Path = CLUSTER_FILE) -> str:
    """The bootstrap address (see the module docstring for the order)."""
    if flag:
        return flag
    if os.environ.get("LANES_BOOTSTRAP"):
        return os.environ["LANES_BOOTSTRAP"]
    if cluster_file.is_file():
        try:
            return str(json.loads(cluster_file.read_text())["bootstrap"])
        except (ValueError, KeyError, OSError):
            pass
    return DEFAULT_BOOTSTRAP


def resolve_tls(cluster_file: Path = CLUSTER_FILE) -> TlsFiles | None:
    """The TLS files every command's channels use (see the module docstring for the order)."""
    from_environment = TlsFiles.from_environment()
    if from_environment is not None:
        return from_environment
    if cluster_file.is_file():
        try:
            tls = json.loads(cluster_file.read_text()).get("tls")
        except (ValueError, OSError):
            return None
        if isinstance(tls, dict) and tls.get("ca"):
            cert, key = tls.get("cert"), tls.get("key")
            return TlsFiles(Path(tls["ca"]), Path(cert) if cert else None, Path(key) if key else None)
    return None


def resolve_credentials(cluster_file: Path = CLUSTER_FILE) -> Credentials | None:
    """The username and password (or bearer token) every command gives (see the module
    docstring for the order)."""
    from_environment = client_credentials("process")
    if from_environment is not None:
        return from_environment
    if cluster_file.is_file():
        try:
            user = json.loads(cluster_file.read_text()).get("user")
            if isinstance(user, dict) and user.get("name") and user.get("password_file"):
                return UserPassword(user["name"], Path(user["password_file"]).read_text().strip())
        except (ValueError, OSError):
            return None
    return None


def common_options() -> argparse.ArgumentParser:
    """``--bootstrap``, ``--output`` and ``--debug``: a parent parser for every command."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--bootstrap",
        "-b",
        default=None,
        metavar="HOST:PORT[,...]",
        help=f"brokers to start from (default: $LANES_BOOTSTRAP, then ./{CLUSTER_FILE}, then {DEFAULT_BOOTSTRAP})",
    )
    parent.add_argument(
        "--output", "-o", choices=["table", "json"], default="table", help="table for people (default), json for tools"
    )
    parent.add_argument("--debug", action="store_true", help="show Python tracebacks of errors")
    return parent


_COMMON = common_options()


def add_command(
    commands: Any,  # argparse's _SubParsersAction (private type)
    name: str,
    *,
    summary: str,
    examples: str,
    run: Command,
    description: str = "",
    common: bool = True,
) -> Parser:
    """A subcommand with the common options, a description and an Examples section."""
    parser: Parser = commands.add_parser(
        name,
        help=summary,
        description=description or summary[0].upper() + summary[1:] + ".",
        epilog="examples:\n" + "\n".join(f"  {line}" for line in examples.strip().splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[_COMMON] if common else [],
    )
    parser.set_defaults(run=run)
    return parser


def add_group(commands: Any, name: str, summary: str) -> Any:
    """A command with subcommands (``lanes topics ...``); returns their subparsers."""
    parser = commands.add_parser(name, help=summary, description=summary[0].upper() + summary[1:] + ".")
    return parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND", parser_class=Parser)


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Rows as left-aligned columns under upper-case headers (None prints as ``-``)."""
    cells = [[str(h).upper() for h in headers]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)


def emit(options: argparse.Namespace, document: Any, render: Callable[[Any], str]) -> None:
    """Print ``document`` as JSON (``--output json``), or as ``render(document)``."""
    if options.output == "json":
        print(json.dumps(document, indent=2))
    else:
        text = render(document)
        if text:
            print(text)


def exit_code_for(error: LanesError) -> int:
    """The documented exit code of a Lanes error."""
    if error.code in _NOT_FOUND:
        return EXIT_NOT_FOUND
    if error.code in _UNAVAILABLE or error.retriable:
        return EXIT_UNAVAILABLE
    return EXIT_REFUSED


def run_command(options: argparse.Namespace, command: Command) -> int:
    """Run a command: errors become one line on stderr and a documented exit code."""
    try:
        return command(options) or EXIT_OK
    except UsageError as exc:
        return _fail(options, str(exc), EXIT_USAGE)
    except NotFoundError as exc:
        return _fail(options, str(exc), EXIT_NOT_FOUND)
    except LanesError as exc:
        hint = CLI_HINTS.get(exc.code, "")
        message = f"{exc.message}; {hint}" if hint and hint not in exc.message else exc.message
        return _fail(options, message, exit_code_for(exc))
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `lanes consume ... | head`: the reader left; not an error
        sys.stderr.close()
        return EXIT_OK
    except Exception as exc:  # a bug: say so, briefly unless --debug
        return _fail(
            options, f"unexpected {type(exc).__name__}: {exc} (a bug; run again with --debug and report it)", EXIT_BUG
        )


def _fail(options: argparse.Namespace, message: str, code: int) -> int:
    if getattr(options, "debug", False):
        traceback.print_exc()
    line = " ".join(message.split())  # one line, whatever the message held
    print(f"lanes: {line}", file=sys.stderr)
    return code


def progress(line: str, *, final: bool = False) -> None:
    """A progress line on stderr, rewritten in place when stderr is a terminal."""
    if sys.stderr.isatty():
        print(f"\r\033[K{line}", end="\n" if final else "", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


def bootstrap_of(options: argparse.Namespace) -> str:
    """The bootstrap this invocation uses."""
    return resolve_bootstrap(getattr(options, "bootstrap", None))


def admin_for(options: argparse.Namespace) -> Admin:
    """An Admin client on this invocation's bootstrap."""
    return Admin(
        bootstrap_of(options),
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        tls=resolve_tls(),
        credentials=resolve_credentials(),
    )


def missing_topic(topic: str) -> NotFoundError:
    """The error for an unknown topic, with the command that creates it."""
    return NotFoundError(
        f"topic {topic!r} does not exist; list topics with: lanes topics list, "
        f"or create it with: lanes topics create {topic} --partitions 3"
    )


def topic_partitions(options: argparse.Namespace, topic: str) -> int:
    """The topic's partition count; an unknown topic is a NotFoundError that says what to do."""
    with admin_for(options) as admin:
        try:
            return len(admin.describe_topic(topic).partitions)
        except UnknownTopicOrPartitionError:
            raise missing_topic(topic) from None


class Stop:
    """Ctrl-C and SIGTERM end the loops of long-running commands between steps (never inside a client
    call): ``lanes consume`` commits what it printed and leaves its group cleanly."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: self.requested.set())

    def __bool__(self) -> bool:
        return self.requested.is_set()

    def wait(self, seconds: float) -> None:
        """Sleep ``seconds``, or until a stop is requested."""
        self.requested.wait(seconds)
