"""`ratchet mcp`'s server with one more tool, ``whoami``, answering `caller(ctx)`: identity made visible.

Usage: ``python -m tests.mcp.server.whoami_server STORE_URL [--agent ID] [--token-file F]
[--transport stdio|http] [--port N]``. It serves as `ratchet mcp` does
(`serve_stdio`, `serve_http`), on the server `build_server` makes.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from mcp.server.mcpserver import Context

from ratchet.mcp.identity import caller, load_tokens
from ratchet.mcp.server import build_server, serve_http, serve_stdio
from ratchet.store import open_store


async def main(args: argparse.Namespace) -> None:
    store = await open_store(args.store)
    try:
        server = build_server(store, agent=args.agent)

        @server.tool(name="whoami")
        def whoami(ctx: Context) -> str:
            return repr(caller(ctx))

        if args.transport == "stdio":
            await serve_stdio(server)
        else:
            tokens = None if args.token_file is None else load_tokens(Path(args.token_file))
            await serve_http(server, host="127.0.0.1", port=args.port, tokens=tokens)
    finally:
        await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--agent")
    parser.add_argument("--token-file")
    parser.add_argument("--transport", default="stdio")
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(main(parser.parse_args()))
