"""A writer process for the SQLite concurrency tests (run as a script, not collected).

    python sqlite_worker.py URL GO_FILE append TASK_ID WORKER COUNT
    python sqlite_worker.py URL GO_FILE claim
    python sqlite_worker.py URL GO_FILE lease TASK_ID WORKER
    python sqlite_worker.py URL GO_FILE session SESSION_ID WORKER COUNT

It opens the store, prints ``ready``, waits until GO_FILE exists (so every
writer starts at the same moment), does its work and exits. ``append`` writes
COUNT events and COUNT journal ops (seq ``WORKER * COUNT + i``) to TASK_ID;
``claim`` claims due triggers until none is left and prints their ids as JSON.
``lease`` claims TASK_ID's lease once and prints the token (null if refused).
``session`` adds COUNT keys ``"wWORKER-i"`` to the session's state, one
`update_session_state` call each.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ratchet.records import Event, Operation, OpKind, OpStatus
from ratchet.store import StateStore, open_store


async def append(store: StateStore, task_id: str, worker: int, count: int) -> None:
    for i in range(count):
        data: dict[str, JsonValue] = {"w": worker, "i": i}
        await store.append_event(Event(task_id=task_id, kind="load", message=f"w{worker} #{i}", data=data))
        seq = worker * count + i
        await store.record_op_finished(
            Operation(
                task_id=task_id,
                seq=seq,
                kind=OpKind.TOOL,
                name="write",
                idempotency_key=f"{task_id}:{seq}",
                status=OpStatus.SUCCEEDED,
                output={"w": worker, "i": i},
            )
        )


async def claim(store: StateStore) -> None:
    claimed: list[int] = []
    while batch := await store.claim_due_triggers(limit=3):
        claimed.extend(trigger.id for trigger in batch)
    print(json.dumps(claimed), flush=True)


async def lease(store: StateStore, task_id: str, worker: int) -> None:
    claimed = await store.claim_lease(task_id, f"w{worker}", 60)
    print(json.dumps(None if claimed is None else claimed.token), flush=True)


async def session(store: StateStore, session_id: str, worker: int, count: int) -> None:
    for i in range(count):

        def add(state: dict[str, Any], key: str = f"w{worker}-{i}", value: int = i) -> dict[str, Any]:
            return {**state, key: value}

        await store.update_session_state(session_id, add)


async def main(url: str, go_file: str, action: str, *args: str) -> None:
    store = await open_store(url)
    try:
        print("ready", flush=True)
        while not Path(go_file).exists():
            time.sleep(0.01)
        if action == "append":
            await append(store, args[0], int(args[1]), int(args[2]))
        elif action == "claim":
            await claim(store)
        elif action == "lease":
            await lease(store, args[0], int(args[1]))
        else:
            await session(store, args[0], int(args[1]), int(args[2]))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
