"""The Model Context Protocol, both ways (docs/mcp.md).

Modules that need the official ``mcp`` SDK import it themselves; importing
this package does not, so Ratchet works without the ``[mcp]`` extra.
"""
