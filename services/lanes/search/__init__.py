"""Searching records where they are stored: the filter language and one scan step (pure cores)."""
