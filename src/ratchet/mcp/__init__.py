"""The MCP server over a store (`ratchet mcp`), built on the official `mcp` SDK.

- `state_tools`: the write tools (create_task, patch_state, handoff ...), over the `Runtime`.

Only these modules import the SDK (``pip install 'ratchet-runtime[mcp]'``);
nothing else in Ratchet imports this package.
"""
