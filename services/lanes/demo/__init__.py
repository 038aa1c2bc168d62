"""The seeds' trading pipeline as a demo (``lanes demo``): a price feed, two strategies as two
consumer groups, candles from Spark (docs/demo.md)."""
