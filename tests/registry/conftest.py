"""Registers the registry tests' fixtures (defined in registry_support.py)."""

from registry_support import fake_registry, write_json

__all__ = ["fake_registry", "write_json"]
