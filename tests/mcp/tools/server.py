"""A real MCP server for the MCP-tools tests, written with the SDK: ``python server.py LOG [--http PORT]``.

While a file LOG with the suffix ``.down`` exists, the server exits at once
(unreachable). Each server writes its pid in LOG with the suffix ``.pids``.
Each line of the file LOG records one thing that happened: ``start`` when the
server starts, ``TOOL ARG`` when a tool begins (so a test counts executions,
and sees that a call started before it kills the worker).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

LOG = Path(sys.argv[1])
BLOCK_SECONDS = 20.0  # a blocked call ends by itself, so no test leaves a server behind for long

server = MCPServer("shop", log_level="WARNING")


def happened(line: str) -> int:
    """Log `line`; how many times it was logged before."""
    before = LOG.read_text(encoding="utf-8").splitlines().count(line) if LOG.exists() else 0
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")
    return before


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(key: str) -> str:
    """The value stored under a key."""
    happened(f"lookup {key}")
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_record(key: str) -> str:
    """Delete the record stored under a key."""
    happened(f"delete_record {key}")
    return f"deleted {key}"


@server.tool(annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=True))
def tag_record(key: str, tag: str) -> str:
    """Tag a record (tagging it twice tags it once)."""
    happened(f"tag_record {key} {tag}")
    return f"tagged {key}"


@server.tool()
def send_mail(to: str) -> str:
    """Send a mail (no annotations: an external action)."""
    happened(f"send_mail {to}")
    return f"mailed {to}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def broken(key: str) -> str:
    """Always fails."""
    happened(f"broken {key}")
    raise ToolError(f"no record {key}")


@server.tool()
def charge(order: str) -> str:
    """Charge an order; the first call blocks (the test kills the worker meanwhile)."""
    if happened(f"charge {order}") == 0:
        time.sleep(BLOCK_SECONDS)
    return f"charged {order}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def audit(order: str) -> str:
    """Read an order's audit trail; the first call blocks (the test kills the worker meanwhile)."""
    if happened(f"audit {order}") == 0:
        time.sleep(BLOCK_SECONDS)
    return f"audit of {order}: clean"


if __name__ == "__main__":
    if LOG.with_suffix(".down").exists():  # the test made the server unreachable
        sys.exit("the server is down")
    happened("start")
    with LOG.with_suffix(".pids").open("a", encoding="utf-8") as pids:  # for a test that kills the machine
        pids.write(f"{os.getpid()}\n")
    if len(sys.argv) > 3 and sys.argv[2] == "--http":
        server.run("streamable-http", port=int(sys.argv[3]))
    else:
        server.run()
