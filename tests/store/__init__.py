"""Tests of the store: schema and migrations, the write path, history and every query."""
