"""`ratchet mcp`: the Model Context Protocol server over a store (docs/mcp.md), on the official ``mcp`` SDK.

Serving a store (`ratchet mcp`):

- the ``state://`` URIs and the JSON documents the resources and ``get_state``
  serve are read-side views, shared with the HTTP API (`ratchet.views.uris`,
  `ratchet.views.documents`);
- `state_server`: `StateServer`, the resources, templates and their listing, over the SDK;
- `subscriptions`: resource updates driven by the store's change feed;
- `identity`: which agent a connection acts as (``--agent``, bearer tokens);
- `server`: `build_server` and the stdio / streamable-HTTP transports;
- `state_tools`: the write tools (create_task, patch_state, handoff ...), over the `Runtime`.

MCP servers' tools for agents (the client side) are `ratchet.agent.mcp`.

Modules that need the SDK import it themselves; importing this package does
not, so Ratchet works without the ``[mcp]`` extra
(``pip install 'ratchet-runtime[mcp]'``).
"""
