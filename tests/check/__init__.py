"""Tests of scanner/check/: one tool list in CI."""
