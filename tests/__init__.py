"""Fathom test suite."""
