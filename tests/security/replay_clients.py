"""Clients replaying one stream of a `ratchet serve` from its start, all at once (test_stream_replay.py).

Run as ``python replay_clients.py BASE PATH COUNT SECONDS``. It opens COUNT
streams of ``BASE + PATH``, prints ``replaying`` once every stream has
answered, reads them for SECONDS, and prints one JSON line: for each stream,
how many messages it received and whether their ids ran 1, 2, 3 ... with no
gap. A process of its own, so its reading competes with the server only as
another machine's clients would.
"""

from __future__ import annotations

import asyncio
import json
import sys

import httpx


async def _replay(client: httpx.AsyncClient, path: str, answered: asyncio.Barrier, ids: list[str]) -> None:
    async with client.stream("GET", path) as response:
        await answered.wait()
        async for line in response.aiter_lines():
            if line.startswith("id:"):
                ids.append(line.removeprefix("id:").strip())


async def main(base: str, path: str, count: int, seconds: float) -> None:
    answered = asyncio.Barrier(count + 1)
    received: list[list[str]] = [[] for _ in range(count)]
    limits = httpx.Limits(max_connections=count)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:
        streams = [asyncio.create_task(_replay(client, path, answered, ids)) for ids in received]
        await answered.wait()
        print("replaying", flush=True)
        await asyncio.sleep(seconds)
        for stream in streams:
            stream.cancel()
        await asyncio.gather(*streams, return_exceptions=True)
    results = [
        {"received": len(ids), "in_order": ids == [str(n) for n in range(1, len(ids) + 1)]}
        for ids in received
    ]
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
