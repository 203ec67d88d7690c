"""Seeded experiments whose results the pages report (cached by content hash)."""
