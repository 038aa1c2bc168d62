"""Results of the comparison: every figure is the median of several runs with its spread, printed
as a table with the ratio Lanes / each peer, and saved as JSON (``tests/perf/results/latest.json``)."""

from __future__ import annotations

import json
import platform
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results" / "latest.json"


@dataclass
class Figure:
    """One system's result for one workload: ``runs`` in ``unit`` (higher is better for rates)."""

    workload: str
    system: str
    durability: str
    unit: str
    runs: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def spread(self) -> float:
        """(max - min) / median, as a fraction."""
        return (max(self.runs) - min(self.runs)) / self.median if self.median else 0.0


def table(figures: list[Figure]) -> str:
    """Per workload: each system's median and spread, and Lanes' ratio to it."""
    lines = [f"{'workload':34} {'system':22} {'median':>14} {'spread':>7}  {'lanes/this':>10}  durability"]
    for workload in dict.fromkeys(f.workload for f in figures):
        rows = [f for f in figures if f.workload == workload]
        best_lanes = max((f.median for f in rows if f.system.startswith("lanes")), default=0.0)
        for f in rows:
            ratio = "" if f.system.startswith("lanes") else f"{best_lanes / f.median:9.2f}x"
            lines.append(
                f"{workload:34} {f.system:22} {f.median:>10,.0f} {f.unit:3} {100 * f.spread:6.1f}%  {ratio:>10}  "
                f"{f.durability}"
            )
    return "\n".join(lines)


def save(figures: list[Figure], settings: dict[str, object], path: Path = RESULTS) -> None:
    """The figures, the settings and the machine, as JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "python": platform.python_version(),
        },
        "settings": settings,
        "figures": [asdict(f) | {"median": f.median, "spread": f.spread} for f in figures],
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
