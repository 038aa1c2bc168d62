"""The images' Dockerfiles, tested for what can be tested without a Docker engine (none runs on
this machine, ../shared/TESTING.md): pinned bases, a non-root numeric user, sources that exist,
extras that exist, and the same package build the image runs, done here."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LANES_DOCKERFILE = ROOT / "deploy" / "docker" / "lanes.Dockerfile"
SPARK_DOCKERFILE = ROOT / "deploy" / "docker" / "lanes-spark.Dockerfile"
DOCKERFILES = [LANES_DOCKERFILE, SPARK_DOCKERFILE]


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile.read_text())
    found = []
    for raw in joined.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            found.append((keyword.upper(), rest.strip()))
    return found


def test_the_base_image_is_pinned_and_the_runtime_user_is_not_root() -> None:
    steps = instructions(LANES_DOCKERFILE)
    arguments = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    base = arguments["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm", base), f"unpinned base {base}"
    stages = [rest for keyword, rest in steps if keyword == "FROM"]
    assert stages == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]
    last = final_stage(LANES_DOCKERFILE)
    users = [rest for keyword, rest in last if keyword == "USER"]
    assert users == ["10001:10001"], "the runtime runs as a numeric non-root user (runAsNonRoot can check it)"
    assert not any(keyword == "RUN" and "apt-get install" in rest for keyword, rest in last), "no compiler"


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    return steps[max(i for i, (keyword, _) in enumerate(steps) if keyword == "FROM") :]


def test_the_spark_image_is_the_pinned_official_spark_with_python_311_and_runs_as_spark() -> None:
    steps = instructions(SPARK_DOCKERFILE)
    arguments = dict(rest.split("=", 1) for keyword, rest in steps if keyword == "ARG" and "=" in rest)
    assert re.fullmatch(r"apache/spark:\d+\.\d+\.\d+-scala2\.13-java17-python3-ubuntu", arguments["SPARK_IMAGE"])
    last = final_stage(SPARK_DOCKERFILE)
    assert [rest for keyword, rest in last if keyword == "USER"][-1] == "185", "Spark's numeric user, not root"
    installs = " ".join(rest for keyword, rest in last if keyword == "RUN")
    assert "gcc" not in installs, "no compiler in the runtime stage"
    assert "-dev" not in installs, "no headers in the runtime stage"
    environment = " ".join(rest for keyword, rest in last if keyword == "ENV")
    assert "PYSPARK_PYTHON=/opt/lanes/bin/python" in environment
    assert "PYSPARK_DRIVER_PYTHON=/opt/lanes/bin/python" in environment
    # The interpreter the image creates its environment with satisfies the project's Python.
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    assert "python3.11 -m venv /opt/lanes" in SPARK_DOCKERFILE.read_text()


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda path: path.name)
def test_every_copied_source_exists_and_the_installed_extra_is_declared(dockerfile: Path) -> None:
    steps = instructions(dockerfile)
    for keyword, rest in steps:
        if keyword == "COPY" and not rest.startswith("--from"):
            *sources, _destination = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    installed = re.findall(r'pip install [^"]*"\.\[([a-z,]+)\]"', dockerfile.read_text())
    assert installed, "the image installs the project with an extra"
    for extra in installed:
        assert set(extra.split(",")) <= set(extras), f"pip install .[{extra}]: undeclared extra"


@pytest.mark.timeout(300)
def test_the_package_the_image_installs_builds_here_with_everything_in_it(tmp_path: Path) -> None:
    """The image's `pip install .` builds this wheel: it must hold the services, the generated
    wire code, the operator, the compiled codec and the `lanes` command."""
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(tmp_path), str(ROOT)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("lanes-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for expected in (
        "lanes/broker/__main__.py",
        "lanes/controller/__main__.py",
        "lanes/coordinator/__main__.py",
        "lanes/v1/broker_pb2.py",
        "lanes_operator/topics.py",
        "lanes_operator/groups.py",
    ):
        assert expected in names, f"{expected} is missing from the wheel"
    assert any(re.fullmatch(r"lanes/protocol/_records_c\..*\.so", name) for name in names), "no compiled codec"
    entry_points = next(name for name in names if name.endswith("entry_points.txt"))
    assert "lanes = lanes.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
