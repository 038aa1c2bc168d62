"""Lanes for Spark: the ``lanes`` data source (PySpark's Python Data Source API, Spark 4.x).

    from lanes_spark import LanesDataSource
    spark.dataSource.register(LanesDataSource)

``LanesDataSource`` is imported on first use, so the package imports without pyspark (the
``lanes-spark`` image's environment gets pyspark from Spark itself at run time).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LanesDataSource"]


def __getattr__(name: str) -> Any:
    if name == "LanesDataSource":
        from lanes_spark.source import LanesDataSource  # noqa: PLC0415 (pyspark only when asked for)

        return LanesDataSource
    raise AttributeError(f"module 'lanes_spark' has no attribute {name!r}")
