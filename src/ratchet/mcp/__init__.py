"""The MCP server over a store (`ratchet mcp`), built on the official `mcp` SDK.

- `uris`: the ``state://`` URIs, parsed and built in one place;
- `documents`: the JSON documents the resources and ``get_state`` serve (no SDK);
- `resources`: resources, templates and their listing, over the SDK;
- `subscriptions`: resource updates driven by the store's change feed;
- `identity`: which agent a connection acts as (``--agent``, bearer tokens);
- `server`: `build_server` and the stdio / streamable-HTTP transports;
- `state_tools`: the write tools (create_task, patch_state, handoff ...), over the `Runtime`.

Only these modules import the SDK (``pip install 'ratchet-runtime[mcp]'``);
nothing else in Ratchet imports this package.
"""
