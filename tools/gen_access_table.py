"""Rewrite the table of docs/security.md saying what every RPC needs, from the guard's rules
(``lanes.runtime.access.rules_table``). Run after changing a rule: ``.venv/bin/python tools/gen_access_table.py``."""

from __future__ import annotations

from pathlib import Path

from lanes.runtime.access.rules_table import with_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"


def main() -> None:
    DOC.write_text(with_table(DOC.read_text()))


if __name__ == "__main__":
    main()
