"""The write tools of `ratchet mcp` through the SDK's in-memory client: what they write, and who may."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet import Runtime, Worker
from ratchet.agent.acting import NOTE
from ratchet.engine.queued_patches import STATE_PATCH
from ratchet.records import TaskStatus, WaitReason
from ratchet.store import StateStore

from ...helpers.scripts import calls, plan, say
from .write_support import DONE, MAIL, call, mail_tools, ok, one_step, refused, script
from .write_support import rt as rt

FACT = {"ops": [{"op": "append_facts", "facts": [{"key": "region", "value": "eu-west-1"}]}]}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """RATCHET_HOME under the test's directory, so workspaces go there."""
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def _created(rt: Runtime, tmp_path: Path, agent: str | None = "alice", **arguments: object) -> str:
    model = script(tmp_path, one_step(DONE))
    created = ok(await call(rt, agent, "create_task", instruction="mail the team", model=model, **arguments))
    return str(created["task_id"])


async def test_create_task_queues_a_task_of_the_caller_that_a_worker_runs(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    model = script(tmp_path, one_step(DONE))

    created = ok(
        await call(
            rt, "alice", "create_task", instruction="mail the team", model=model, name="mailer", priority=2
        )
    )

    task = await store.get_task(created["task_id"])
    assert (task.agent, task.name, task.status, task.priority) == ("alice", "mailer", TaskStatus.QUEUED, 2)
    assert created["uri"] == f"state://agents/alice/tasks/{task.id}"
    assert created["status"] == "queued"
    await Worker(store, poll_interval=0.01).run(until_idle=True)
    done = await store.get_task(task.id)
    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.agent == "alice"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"model": "nosuch:model"}, "nosuch"),
        ({"tools": ["missing_tools.py"]}, "tools: no file at"),
        ({"deadline": "soon"}, "deadline: 'soon' is not a duration"),
        ({"priority": 42}, "priority 42"),
        ({"max_steps": 0}, "max_steps"),
        # Numbers out of range, or not whole numbers, as a client may send them: one line, not stored.
        ({"max_steps": 10**30}, "max_steps: 1000000000000000000000000000000 is not a number of steps"),
        ({"max_steps": 2**31}, "give a whole number from 1 to 2147483647"),
        ({"max_steps": 1.5}, "max_steps: 1.5 is not a number of steps"),
        ({"max_steps": "7"}, "max_steps: '7' is not a number of steps"),
        ({"max_steps": True}, "max_steps: True is not a number of steps"),
        ({"priority": 10**30}, "priority 1000000000000000000000000000000: give a whole number from 0"),
        ({"priority": -1}, "priority -1"),
        ({"priority": True}, "priority True"),
        ({"priority": 2.5}, "priority 2.5"),
        ({"deadline": f"{10**30}s"}, "deadline: '1000000000000000000000000000000s' is too long"),
        ({"inputs": {"agent": 1}}, "'agent' is reserved"),
        ({"instruction": "x" * 300_000}, "instruction"),
        ({"instruction": " "}, "instruction: say what the agent is to do"),
        ({"tools": ["/etc/ratchet_tools.py"]}, "tools: no file at"),
    ],
)
async def test_create_task_refuses_bad_input_in_one_line_and_writes_nothing(
    rt: Runtime, store: StateStore, tmp_path: Path, arguments: dict[str, object], expected: str
) -> None:
    given = {"instruction": "mail the team", "model": script(tmp_path, one_step(DONE)), **arguments}

    message = refused(await call(rt, "alice", "create_task", **given))

    assert expected in message
    assert await store.list_tasks() == []


async def test_patch_by_another_agent_is_refused_then_accepted_after_a_handoff(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    task_id = await _created(rt, tmp_path)

    message = refused(await call(rt, "bob", "patch_state", task_id=task_id, patch=FACT))
    assert message.endswith(
        f"task {task_id} belongs to agent alice; agent bob may not patch it: "
        "ask alice to hand it off or grant it"
    )
    assert (await store.get_task(task_id)).state.known_facts == []

    handed = ok(await call(rt, "alice", "handoff", task_id=task_id, to_agent="bob", note="yours now"))
    assert handed["uri"] == f"state://agents/bob/tasks/{task_id}"
    patched = ok(await call(rt, "bob", "patch_state", task_id=task_id, patch=FACT))

    task = await store.get_task(task_id)
    assert task.agent == "bob"
    assert [f.value for f in task.state.known_facts] == ["eu-west-1"]
    assert patched["state"]["known_facts"][0]["key"] == "region"
    [handoff] = [e for e in await store.list_events(task_id) if e.kind == "handed_off"]
    assert handoff.data == {"from": "alice", "to": "bob", "note": "yours now", "by": "alice"}
    [state_patched] = [e for e in await store.list_events(task_id) if e.kind == "state_patched"]
    assert state_patched.data["by"] == "bob"
    # the note reaches the task as a note; alice gave the task away and may no longer write it
    assert [m.name for m in await store.list_inbox(task_id)] == [NOTE, STATE_PATCH]
    assert "belongs to agent bob; agent alice may not" in refused(
        await call(rt, "alice", "patch_state", task_id=task_id, patch=FACT)
    )


async def test_a_grant_lets_another_agent_write_without_giving_the_task_away(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    task_id = await _created(rt, tmp_path)
    assert "may not grant it" in refused(await call(rt, "bob", "grant", task_id=task_id, agent="bob"))

    assert "is not an agent id" in refused(await call(rt, "alice", "grant", task_id=task_id, agent=" "))
    assert "is not an agent id" in refused(await call(rt, "alice", "handoff", task_id=task_id, to_agent=""))
    granted = ok(await call(rt, "alice", "grant", task_id=task_id, agent="carol"))
    ok(await call(rt, "carol", "patch_state", task_id=task_id, patch=FACT))
    again = ok(await call(rt, "alice", "grant", task_id=task_id, agent="carol"))

    assert (granted["new"], again["new"], again["granted"]) == (True, False, ["carol"])
    assert (await store.get_task(task_id)).agent == "alice"
    assert len((await store.get_task(task_id)).state.known_facts) == 1
    # a grant lets carol write, not give the task away
    message = refused(await call(rt, "carol", "handoff", task_id=task_id, to_agent="carol"))
    assert "was granted it and may write it, but only alice may hand it off" in message
    assert "belongs to agent alice; agent bob may not patch" in refused(
        await call(rt, "bob", "patch_state", task_id=task_id, patch=FACT)
    )


async def test_a_connection_acting_as_no_agent_creates_but_may_not_write(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    task_id = await _created(rt, tmp_path, agent=None)

    message = refused(await call(rt, None, "patch_state", task_id=task_id, patch=FACT))

    assert (await store.get_task(task_id)).agent == "agent"
    assert f"task {task_id}: this connection acts as no agent, so it may not patch it;" in message
    assert "ratchet mcp --agent ID" in message
    for tool, arguments in [
        ("append_note", {"text": "hi"}),
        ("cancel", {}),
        ("handoff", {"to_agent": "bob"}),
        ("grant", {"agent": "bob"}),
    ]:
        assert "acts as no agent" in refused(await call(rt, None, tool, task_id=task_id, **arguments))
    assert (await store.get_task(task_id)).status is TaskStatus.QUEUED


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"ops": []}, "invalid state patch: ops"),
        ({"ops": [{"op": "forget_everything"}]}, "invalid state patch: ops.0"),
        ({"ops": [{"op": "resolve_question", "question": "why?"}]}, "'why?' is not an open question"),
        ({"oops": 1}, "invalid state patch"),
    ],
)
async def test_an_invalid_patch_is_one_line_and_writes_nothing(
    rt: Runtime, store: StateStore, tmp_path: Path, patch: dict[str, object], expected: str
) -> None:
    task_id = await _created(rt, tmp_path)
    before = await store.get_task(task_id)
    events = await store.list_events(task_id)

    message = refused(await call(rt, "alice", "patch_state", task_id=task_id, patch=patch))

    assert expected in message
    assert await store.get_task(task_id) == before
    assert await store.list_events(task_id) == events
    assert await store.list_inbox(task_id) == []


async def test_unknown_and_ended_tasks_are_refused_in_one_line(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    assert "no task with id 'nope'" in refused(
        await call(rt, "alice", "patch_state", task_id="nope", patch=FACT)
    )
    assert "no task with id 'nope'" in refused(await call(rt, "alice", "approve", task_id="nope"))
    task_id = await _created(rt, tmp_path)
    cancelled = ok(await call(rt, "alice", "cancel", task_id=task_id, reason="not needed"))
    assert cancelled["status"] == "cancelled"
    assert (await store.get_task(task_id)).error == "not needed"
    events = await store.list_events(task_id)

    message = refused(await call(rt, "alice", "patch_state", task_id=task_id, patch=FACT))

    assert f"task {task_id} is already cancelled: its record is final" in message
    assert "fork" in message
    assert await store.list_events(task_id) == events
    assert "already cancelled" in refused(await call(rt, "alice", "handoff", task_id=task_id, to_agent="bob"))


async def _waiting_for_approval(rt: Runtime, store: StateStore, tmp_path: Path, *acts: object) -> str:
    model = script(tmp_path, one_step(*acts))  # type: ignore[arg-type]
    created = ok(
        await call(
            rt, "alice", "create_task", instruction="mail the team", model=model, tools=[mail_tools(tmp_path)]
        )
    )
    task = await rt.resume(str(created["task_id"]))
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL), task.error
    return task.id


async def test_approve_and_deny_through_the_tools(rt: Runtime, store: StateStore, tmp_path: Path) -> None:
    approved_id = await _waiting_for_approval(rt, store, tmp_path, MAIL, DONE)
    assert "may not approve its call" in refused(await call(rt, "bob", "approve", task_id=approved_id))

    approved = ok(
        await call(rt, "alice", "approve", task_id=approved_id, edit_args={"to": "ops@example.com"})
    )

    assert approved["status"] == "waiting(timer)"
    assert str(approved["next"]).startswith("Approved at ") and "with edited arguments: send_mail" in str(
        approved["next"]
    )
    assert f"or now with `ratchet resume {approved_id}`" in str(approved["next"])
    twice = refused(await call(rt, "alice", "approve", task_id=approved_id))
    [decided] = await store.list_approvals(approved_id)
    assert f"send_mail (operation {decided.seq}) of task {approved_id} was approved already, at " in twice
    assert "nothing was changed" in twice
    done = await rt.resume(approved_id)
    assert done.status is TaskStatus.COMPLETED, done.error
    [mail] = [op for op in await store.list_ops(approved_id) if op.name == "send_mail"]
    assert mail.output == "mail sent to ops@example.com"

    second = tmp_path / "second"
    second.mkdir()
    denied_id = await _waiting_for_approval(rt, store, second, MAIL, say("could not mail"))
    assert "say why the call is denied" in refused(
        await call(rt, "alice", "deny", task_id=denied_id, reason=" ")
    )
    denied = ok(await call(rt, "alice", "deny", task_id=denied_id, reason="not on a Friday"))
    assert denied["task_id"] == denied_id
    assert str(denied["next"]).startswith("Denied at ") and ": not on a Friday." in str(denied["next"])
    assert "denied already" in refused(await call(rt, "alice", "deny", task_id=denied_id, reason="again"))
    [approval] = await store.list_approvals(denied_id)
    assert approval.status == "denied"


async def test_answer_and_append_note_through_the_tools(
    rt: Runtime, store: StateStore, tmp_path: Path
) -> None:
    question = "Which region?"
    model = script(
        tmp_path,
        {"plan": [plan("deploy X", check="")], "act": [calls(("ask_user", {"question": question})), DONE]},
    )
    task_id = str(ok(await call(rt, "alice", "create_task", instruction="deploy X", model=model))["task_id"])
    waiting = await rt.resume(task_id)
    assert waiting.waiting_on is WaitReason.INPUT
    assert "may not answer it" in refused(await call(rt, "bob", "answer", task_id=task_id, text="eu"))

    assert "text: give the answer" in refused(await call(rt, "alice", "answer", task_id=task_id, text=""))
    ok(await call(rt, "alice", "answer", task_id=task_id, text="eu-west-1"))
    sent = ok(await call(rt, "alice", "append_note", task_id=task_id, text="use the blue fleet"))
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert sent["message"] == 1
    acts = [op for op in await store.list_ops(task_id) if op.name == "model:act"]
    last = acts[-1].input["messages"]
    assert any("use the blue fleet" in str(m.get("content")) for m in last)
    assert "already completed" in refused(
        await call(rt, "alice", "append_note", task_id=task_id, text="late")
    )


async def test_create_task_loads_no_tools_file_its_server_does_not_trust(
    store: StateStore, tmp_path: Path
) -> None:
    untrusting = Runtime(store)  # tmp_path is outside the project root and not allowed
    given = {
        "instruction": "mail",
        "model": script(tmp_path, one_step(DONE)),
        "tools": [mail_tools(tmp_path)],
    }

    message = refused(await call(untrusting, "alice", "create_task", **given))

    assert "mail_tools.py is outside" in message and "admit it with" in message
    assert await store.list_tasks() == []
