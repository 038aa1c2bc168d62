"""Results of the comparison: every figure is the median of several runs with its spread, printed
as a table with Lanes' ratio to each peer and to the machine's limits, saved as JSON
(``tests/perf/results/latest.json``) and drawn as a PNG chart (``latest.png``).

Ratios: ``lanes/this`` divides Lanes' figure (acks=1 on one broker, the peers' single-node
setting; Lanes acks=all on three brokers for a peer's acks=all row) by the row's; for throughput
higher is better, for latency lower is better. ``lanes/limit`` divides Lanes acks=1 produce
throughput (MiB/s of values) by a limit's MiB/s.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
LANES_REFERENCE = "lanes acks=1"


@dataclass
class Figure:
    """One system's result for one workload: ``runs`` in ``unit``."""

    workload: str
    system: str
    durability: str
    unit: str
    runs: list[float] = field(default_factory=list)
    higher_is_better: bool = True

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def spread(self) -> float:
        """(max - min) / median, as a fraction."""
        return (max(self.runs) - min(self.runs)) / self.median if self.median else 0.0


def _lanes_reference(rows: list[Figure], row: Figure) -> Figure | None:
    """The Lanes figure ``row`` is compared with: the same acks where Lanes has it, else acks=1."""
    lanes = [f for f in rows if f.system.startswith("lanes")]
    wanted = "lanes acks=all" if row.system.endswith("acks=all") else LANES_REFERENCE
    return next((f for f in lanes if f.system == wanted), next((f for f in lanes if f.system == LANES_REFERENCE), None))


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


def table(figures: list[Figure], lanes_mib_s: float | None = None) -> str:
    """Per workload: each system's median and spread, Lanes' ratio to it; limits with Lanes' fraction."""
    header = f"{'workload':40} {'system':26} {'median':>12} {'unit':6} {'spread':>7} {'lanes/this':>11}  settings"
    lines = [header, "-" * len(header)]
    for workload in dict.fromkeys(f.workload for f in figures):
        rows = [f for f in figures if f.workload == workload]
        for f in rows:
            reference = _lanes_reference(rows, f)
            if f.unit == "MiB/s" and f.workload.startswith("limit"):
                ratio = f"{lanes_mib_s / f.median:10.2f}x" if lanes_mib_s else ""
            elif reference is None or f is reference or f.system.startswith("lanes"):
                ratio = ""
            else:
                ratio = f"{reference.median / f.median:10.2f}x"
            lines.append(
                f"{workload:40} {f.system:26} {_number(f.median):>12} {f.unit:6} {100 * f.spread:6.1f}% {ratio:>11}  "
                f"{f.durability}"
            )
    return "\n".join(lines)


def machine() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def save(figures: list[Figure], settings: dict[str, object], directory: Path = RESULTS) -> Path:
    """The figures, the settings and the machine, as JSON; returns the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    document = {
        "machine": machine(),
        "settings": settings,
        "figures": [asdict(f) | {"median": f.median, "spread": f.spread} for f in figures],
    }
    path = directory / "latest.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def chart(figures: list[Figure], lanes_mib_s: float | None = None, directory: Path = RESULTS) -> Path:
    """One bar chart per unit group (throughput, latency, limits with Lanes acks=1 produce of
    1 KiB values in MiB/s next to them), medians with min-max whiskers."""
    import matplotlib  # noqa: PLC0415 - only `make bench` installs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    groups = {
        "throughput (records/s, higher is better)": [f for f in figures if f.unit == "rec/s"],
        "latency (ms, lower is better)": [f for f in figures if f.unit == "ms"],
        "machine limits and Lanes (MiB/s)": [f for f in figures if f.unit == "MiB/s"]
        + ([Figure("produce 1 KiB values", LANES_REFERENCE, "", "MiB/s", [lanes_mib_s])] if lanes_mib_s else []),
    }
    groups = {title: rows for title, rows in groups.items() if rows}
    fig, axes = plt.subplots(len(groups), 1, figsize=(14, 5.5 * len(groups)), squeeze=False)
    colours = {"lanes": "#2a7ab9", "kafka": "#e0a030", "redis": "#c8423b", "nats": "#3a9a5b"}
    for axis, (title, rows) in zip(axes[:, 0], groups.items(), strict=True):
        labels = [f"{f.workload}\n{f.system}" for f in rows]
        medians = [f.median for f in rows]
        errors = [[f.median - min(f.runs) for f in rows], [max(f.runs) - f.median for f in rows]]
        colour = [next((c for k, c in colours.items() if f.system.startswith(k)), "#777777") for f in rows]
        axis.bar(range(len(rows)), medians, yerr=errors, color=colour, capsize=3)
        axis.set_xticks(range(len(rows)), labels, rotation=60, ha="right", fontsize=7)
        axis.set_title(title)
        if title.startswith("latency"):
            axis.set_yscale("log")
        axis.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path = directory / "latest.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
