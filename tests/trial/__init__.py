"""Tests of ``fathom try`` against loopback stubs of each provider."""
