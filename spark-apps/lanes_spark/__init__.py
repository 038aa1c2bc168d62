"""The PySpark data source for Lanes (issue #10; not built yet)."""
