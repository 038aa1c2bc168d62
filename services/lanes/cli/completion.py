"""``lanes completion bash|zsh``: the shell completion script, generated from the parser by shtab
(so it always matches the commands and flags of this version)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import shtab

from lanes.cli.common import add_command


def register(commands: Any, build_parser: Callable[[], argparse.ArgumentParser]) -> None:
    """Add ``completion`` to the ``lanes`` parser (``build_parser`` gives the whole parser)."""

    def completion(options: argparse.Namespace) -> None:
        print(shtab.complete(build_parser(), shell=options.shell))

    parser = add_command(
        commands,
        "completion",
        summary="print the shell completion script for bash or zsh",
        examples="""
source <(lanes completion bash)                                   # this shell
lanes completion bash > ~/.local/share/bash-completion/completions/lanes
lanes completion zsh > "${fpath[1]}/_lanes"                        # then restart zsh""",
        run=completion,
        common=False,
    )
    parser.add_argument("shell", choices=["bash", "zsh"])
