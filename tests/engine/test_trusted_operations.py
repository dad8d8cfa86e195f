"""The operations the journal builds unchecked (`trusted_operation`) are what validation would make."""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

import ratchet
from ratchet.engine.calls import Call
from ratchet.policy import RetryPolicy
from ratchet.records import Operation, OpStatus, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

_SEEN: list[Operation] = []
_FAILS = {"left": 1}


class _Keep:
    """Keeps each call's last intent and its outcome, as the journal built them."""

    async def __call__(self, call: Call, proceed: Any) -> JsonValue:
        try:
            return await proceed(call)  # type: ignore[no-any-return]
        finally:
            outcome = call.context.journal.lookup(call.seq)
            _SEEN.extend(op for op in (call.intent, outcome) if op is not None)


@ratchet.tool
async def _flaky(note: str) -> dict[str, Any]:
    """Fail once, then succeed."""
    if _FAILS["left"]:
        _FAILS["left"] -= 1
        raise RuntimeError("not yet")
    return {"note": note, "nested": [1, 2.5, None, {"a": "b"}]}


@ratchet.tool(risk="read_only")
async def _look(note: str) -> str:
    """Read something."""
    return note.upper()


@ratchet.tool(retry=RetryPolicy(maximum_attempts=1))
async def _broken(note: str) -> None:
    """Always fail."""
    raise ValueError(f"broken: {note}")


@ratchet.workflow(
    tools=[_flaky, _look, _broken],
    middleware=[_Keep()],
    retry=RetryPolicy(initial_interval=0.01, maximum_attempts=2),
)
async def _journaled(ctx: ratchet.Context) -> list[JsonValue]:
    results = [await ctx.call_tool("_flaky", {"note": "x"}), await ctx.call_tool("_look", {"note": "y"})]
    try:
        await ctx.call_tool("_broken", {"note": "z"})
    except ratchet.OperationFailed:
        results.append("failed")
    return results


async def test_each_operation_the_journal_builds_is_the_one_validation_would_make(
    rt: Runtime, store: StateStore
) -> None:
    _SEEN.clear()
    _FAILS["left"] = 1
    task = await rt.run(_journaled)
    assert task.status is TaskStatus.COMPLETED, task.error

    assert [(op.seq, op.status, op.attempt) for op in _SEEN] == [
        (0, OpStatus.STARTED, 2),  # the intent of its second attempt, after a retry
        (0, OpStatus.SUCCEEDED, 2),
        (1, OpStatus.SUCCEEDED, 1),  # read-only: no intent
        (2, OpStatus.STARTED, 1),
        (2, OpStatus.FAILED, 1),
    ]
    for op in _SEEN:
        validated = Operation.model_validate(op.model_dump())
        assert op == validated
        assert op.model_dump_json() == validated.model_dump_json()  # every field, in its order
        assert op.model_fields_set == set(Operation.model_fields)
    # What the store kept is what was built.
    finished = {op.seq: op for op in _SEEN if op.is_finished}
    assert {op.seq: op for op in await store.list_ops(task.id)} == finished
