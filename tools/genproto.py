"""Generate the lanes.v1 Python package from proto/lanes/v1/*.proto.

Usage: ``python tools/genproto.py [--out DIR]`` (``make proto``). Output goes to
``services/lanes/v1`` by default: ``*_pb2.py`` messages, ``*_pb2.pyi`` type stubs and
``*_pb2_grpc.py`` service stubs, plus a generated ``__init__.py``. The generator is
grpcio-tools, pinned exactly in pyproject.toml so every machine produces the same bytes;
tests/unit/test_proto_generated.py regenerates into a temporary directory and fails when
the committed output differs.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PROTO_PACKAGE = Path("lanes") / "v1"
DEFAULT_OUT = ROOT / "services" / "lanes" / "v1"

INIT_TEXT = '''"""Generated lanes.v1 wire contract. DO NOT EDIT: run `make proto`.

Source: proto/lanes/v1/*.proto. Messages are in ``*_pb2``, services in ``*_pb2_grpc``.
"""
'''


def proto_files() -> list[Path]:
    """The contract's .proto files, relative to ``proto/``, in a stable order."""
    return sorted(p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / PROTO_PACKAGE).glob("*.proto"))


def generate(out_dir: Path) -> list[Path]:
    """Generate the package into ``out_dir`` (replacing it); return the files written."""
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        include = Path(protoc.__file__).parent / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--python_out={staging}",
            f"--pyi_out={staging}",
            f"--grpc_python_out={staging}",
            *(str(p) for p in proto_files()),
        ]
        status = protoc.main(args)
        if status != 0:
            raise SystemExit(f"protoc failed with status {status}")
        generated = staging / PROTO_PACKAGE
        (generated / "__init__.py").write_text(INIT_TEXT)
        (generated / "py.typed").write_text("")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        shutil.copytree(generated, out_dir)
    return sorted(p for p in out_dir.iterdir() if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output package directory")
    options = parser.parse_args(argv)
    for path in generate(options.out):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
