"""Reusable MCP test servers: official-SDK servers and hostile ones, launchable as subprocesses on loopback."""
