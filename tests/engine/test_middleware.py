"""A user's own middleware, passed with ``@workflow(middleware=[...])``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import entries
from .support import run_until_crash


async def test_a_custom_middleware_sees_every_live_call_and_can_change_its_result(
    store: StateStore, rt: Runtime, ledger: str, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"act": [{"content": "hello"}]})
    task_id = await run_until_crash(rt, "spied", {"ledger": ledger}, model=model)

    seen = [(e["seq"], e["name"], e["kind"]) for e in entries(ledger, "spy")]
    assert seen == [
        (0, "shout", "tool"),
        (1, "record", "tool"),
        (2, "model:act", "model"),
        (3, "crash_once", "tool"),
    ]

    task = await Runtime(store).resume(task_id)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == {"shout": "QUIET", "answer": "hello"}
    assert len(entries(ledger, "r")) == 1
