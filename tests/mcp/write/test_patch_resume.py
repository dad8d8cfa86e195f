"""``patch_state`` on a waiting agent task: kept by its resumes, seen by the agent, replayed."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet import Runtime
from ratchet.engine.queued_patches import STATE_PATCH
from ratchet.records import OpKind, TaskStatus, WaitReason
from ratchet.store import StateStore

from .write_support import DONE, MAIL, call, mail_tools, ok, one_step, script
from .write_support import rt as rt

REGION = {"ops": [{"op": "append_facts", "facts": [{"key": "region", "value": "eu-west-1"}]}]}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def test_a_patch_to_a_waiting_agent_survives_its_resumes_and_reaches_the_model(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    # Each act turn asks for a mail (each waits for approval), then reports.
    model = script(tmp_path, one_step(MAIL, MAIL, DONE))
    tools = [mail_tools(tmp_path)]
    created = ok(await call(rt, "alice", "create_task", instruction="mail", model=model, tools=tools))
    task_id = str(created["task_id"])
    first = await rt.resume(task_id)
    assert first.waiting_on is WaitReason.APPROVAL, first.error

    patched = ok(await call(rt, "alice", "patch_state", task_id=task_id, patch=REGION))

    assert patched["state"]["known_facts"] == [{"key": "region", "value": "eu-west-1", "source": "agent"}]
    assert [f.key for f in (await store.get_task(task_id)).state.known_facts] == ["region"]  # at once
    ok(await call(rt, "alice", "approve", task_id=task_id))
    second = await rt.resume(task_id)  # replays turn 1, takes the patch at turn 2, waits again
    assert second.waiting_on is WaitReason.APPROVAL, second.error
    assert [f.key for f in second.state.known_facts] == ["region"]
    acts = [op for op in await store.list_ops(task_id) if op.name == "model:act"]
    told = [m["content"] for m in acts[1].input["messages"] if m["role"] == "user"]
    assert any("Agent alice changed this task's working memory" in t and "eu-west-1" in t for t in told)

    ok(await call(rt, "alice", "approve", task_id=task_id))
    done = await rt.resume(task_id)  # replays the take too: the same state, no second take

    assert done.status is TaskStatus.COMPLETED, done.error
    assert [f.key for f in done.state.known_facts] == ["region"]
    takes = [op for op in await store.list_ops(task_id) if op.kind is OpKind.RECEIVE]
    assert [(op.name, op.seq) for op in takes] == [(STATE_PATCH, acts[1].seq - 1)]
    assert await store.list_inbox(task_id, pending_only=True) == []


async def test_a_task_handed_off_while_it_waits_resumes_as_recorded_and_reads_the_note(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    model = script(tmp_path, one_step(MAIL, DONE))
    tools = [mail_tools(tmp_path)]
    created = ok(await call(rt, "alice", "create_task", instruction="mail", model=model, tools=tools))
    task_id = str(created["task_id"])
    assert (await rt.resume(task_id)).waiting_on is WaitReason.APPROVAL

    ok(await call(rt, "alice", "handoff", task_id=task_id, to_agent="bob", note="the list is in the wiki"))
    ok(await call(rt, "bob", "approve", task_id=task_id))
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.agent == "bob"
    assert isinstance(done.inputs_params["agent"], dict)
    assert done.inputs_params["agent"]["name"] == "alice"  # the spec it recorded: the same agent runs it
    acts = [op for op in await store.list_ops(task_id) if op.name == "model:act"]
    told = [m["content"] for m in acts[-1].input["messages"] if m["role"] == "user"]
    assert any("handed off to you (agent bob) by agent alice: the list is in the wiki" in t for t in told)
