"""Writes from outside a running task: its run's later writes keep them, and its journal replays them."""

from __future__ import annotations

import pytest

from ratchet import Context, Runtime
from ratchet.engine import workflow
from ratchet.engine.queued_patches import STATE_PATCH
from ratchet.records import OpKind, TaskStatus
from ratchet.store import StateStore
from ratchet.tools import tool

HERE = "tests.engine.test_outside_writes"
REGION = {"ops": [{"op": "append_facts", "facts": [{"key": "region", "value": "eu-west-1"}]}]}
OWN = {"ops": [{"op": "append_facts", "facts": [{"key": "own", "value": 1}]}]}


@pytest.fixture(params=["sqlite", "postgres"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """A store another connection reaches by URL while the task runs (the tool below is one)."""
    return str(request.param)


@tool(idempotent=True)
async def write_from_outside(url: str, task_id: str, to_agent: str) -> None:
    """What another client does while the task runs: patch its state and hand it off."""
    async with Runtime(url) as other:
        await other.patch_state(task_id, REGION)
        await other.handoff(task_id, to_agent)


@workflow(tools=[write_from_outside])
async def written_meanwhile(ctx: Context, url: str, own: bool) -> list[str]:
    await ctx.call_tool("write_from_outside", {"url": url, "task_id": ctx.task_id, "to_agent": "bob"})
    await ctx.emit("a progress write with what the run knew before")
    if own:
        await ctx.apply_patch(OWN)
        await ctx.receive("go")  # waits: the resume replays all of the above
    return [fact.key for fact in ctx.state.known_facts]


async def test_a_run_that_never_takes_the_patch_keeps_it_and_the_handoff(
    rt: Runtime, store: StateStore, store_url: str
) -> None:
    task = await rt.run(written_meanwhile, {"url": store_url, "own": False})

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == []  # the run never took it: its own view has no such fact
    stored = await store.get_task(task.id)
    assert [f.key for f in stored.state.known_facts] == ["region"]
    assert stored.agent == "bob"
    assert [m.name for m in await store.list_inbox(task.id, pending_only=True)] == [STATE_PATCH]


async def test_a_run_takes_the_patch_before_its_own_and_a_replay_takes_it_again(
    rt: Runtime, store: StateStore, store_url: str
) -> None:
    waiting = await rt.run(written_meanwhile, {"url": store_url, "own": True})
    assert waiting.status is TaskStatus.WAITING, waiting.error
    ops = await store.list_ops(waiting.id)
    assert [(op.kind, op.name) for op in ops][1:3] == [
        (OpKind.RECEIVE, STATE_PATCH),
        (OpKind.STATE, "apply_patch"),
    ]

    await rt.send(waiting.id, "go")
    task = await rt.resume(waiting.id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["region", "own"]  # the replay took the same patch at the same place
    stored = await store.get_task(task.id)
    assert [f.key for f in stored.state.known_facts] == ["region", "own"]
    assert stored.agent == "bob"
    assert [op.seq for op in await store.list_ops(task.id)] == [op.seq for op in ops]
    assert await store.list_inbox(task.id, pending_only=True) == []
