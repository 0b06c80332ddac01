"""Fathom: what an MCP server's tool list costs a model per turn, and what a model would stumble over."""

__version__ = "0.1.0"
