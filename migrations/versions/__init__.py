"""Alembic revisions, oldest first (``0001_initial`` creates the whole schema)."""
