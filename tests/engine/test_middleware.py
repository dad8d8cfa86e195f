"""A user's own middleware, passed with ``@workflow(middleware=[...])``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ratchet.engine.calls.middleware import Middleware, default_chain, tool_chain
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


def test_a_tool_call_passes_through_no_layer_that_would_do_nothing_for_it() -> None:
    def layers(chain: list[Middleware]) -> list[str]:
        return [type(layer).__name__ for layer in chain]

    everything = layers(default_chain())
    assert "LimitMiddleware" in everything and "BudgetMiddleware" in everything  # a model call's
    unlimited = ["ObserveCalls", "EventsMiddleware", "ApprovalMiddleware", "JournalMiddleware"]
    unlimited.append("RetryMiddleware")
    assert layers(tool_chain(budgeted=False)) == unlimited
    # A task with a limit checks it around each tool call too (tests/engine/test_limits.py).
    assert layers(tool_chain(budgeted=True)) == [*unlimited[:2], "BudgetMiddleware", *unlimited[2:]]
