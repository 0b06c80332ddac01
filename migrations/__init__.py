"""Alembic environment and versions for Fathom's database, shipped inside the wheel so any install can migrate.

``scanner.store.engine`` points Alembic here in code; no ``alembic.ini`` is needed at runtime.
"""
