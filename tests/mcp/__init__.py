"""The Model Context Protocol both ways, through the official SDK's real client and servers.

server/: `ratchet mcp`'s state resources, subscriptions, identity and sharing;
write/: its write tools; tools/: MCP servers' tools offered to agents.

This package is `tests.mcp`, never a top-level `mcp`: tests/ is itself a
package, so `import mcp` anywhere in the suite still finds the SDK. (A Python
started inside tests/ itself would find this package first: start programs
from the checkout's root or a temporary directory, as every test does.)
"""
