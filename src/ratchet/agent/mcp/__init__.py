"""MCP servers' tools for agents: the client side of the Model Context Protocol (docs/mcp.md).

- `servers`: `MCPServer`, how to reach a server, and the risk its tools' annotations give (no SDK);
- `client`: a run's connections to its servers;
- `tools`: `MCPTool`, a server's tool journaled like any tool.

The state server (`ratchet mcp`) is `ratchet.mcp`: it serves a store and runs
no agent. Modules that need the SDK import it themselves; importing this
package does not (``import ratchet`` loads `servers`), so Ratchet works
without the ``[mcp]`` extra (``pip install 'ratchet-runtime[mcp]'``).
"""
