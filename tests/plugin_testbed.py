"""Testbed fixtures (filled in by the testbed runner work)."""
