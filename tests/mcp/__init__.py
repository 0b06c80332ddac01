"""Tests of the raw MCP client (scanner.mcp) against real servers on loopback."""
