"""Approval gates: a risky call waits for a person, durably; approve, edit, deny, time out."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from ratchet import CannotResume, InputError, Runtime, Worker
from ratchet.engine.people import check_edited_arguments, expire_approval, settle_approval
from ratchet.engine.workflow import Workflow, load_workflow
from ratchet.errors import AlreadyDecided, WorkflowNotFound
from ratchet.records import ApprovalStatus, OpStatus, TaskStatus, WaitReason
from ratchet.store import StateStore, open_store

from ..helpers.people_flows import mail, mail_both, sends
from ..helpers.stores import STORE_URLS, discard, opened

REPO = Path(__file__).resolve().parents[2]


async def _waiting(rt: Runtime, ledger: str, **inputs: JsonValue) -> str:
    task = await rt.run(mail, {"ledger": ledger, **inputs})
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL), task.error
    return task.id


async def test_a_risky_call_waits_for_a_person_and_shows_the_exact_call(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger, to="team@example.com")

    [approval] = await store.list_approvals(task_id, pending_only=True)
    assert approval.tool == "send"
    assert approval.arguments == {"ledger": ledger, "to": "team@example.com"}
    assert approval.step == 0
    assert "external_action" in approval.why
    assert sends(ledger) == []
    waiting = [e for e in await store.list_events(task_id) if e.kind == "waiting"][-1]
    assert waiting.data["tool"] == "send" and waiting.data["reason"] == "approval"
    # nothing resumes it by itself: not `resume`, not a worker
    with pytest.raises(CannotResume, match=r"approval of send .*team@example\.com.*ratchet approve"):
        await rt.resume(task_id)
    await Worker(store, poll_interval=0.01).run(until_idle=True)
    assert (await store.get_task(task_id)).waiting_on is WaitReason.APPROVAL
    assert sends(ledger) == []


async def test_approved_the_call_runs_once_and_a_replay_never_asks_again(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger, times=2)

    queued = await rt.approve(task_id)
    assert (queued.status, queued.waiting_on) == (TaskStatus.WAITING, WaitReason.TIMER)
    assert [t.kind for t in await store.list_triggers(task_id)] == ["wake"]
    second = await rt.resume(task_id)  # the first send runs; the second waits in turn
    assert second.waiting_on is WaitReason.APPROVAL
    assert len(sends(ledger)) == 1
    await rt.approve(task_id)
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == [{"sent_to": "ops@example.com"}] * 2
    assert [s["key"] for s in sends(ledger)] == [f"{task_id}:0", f"{task_id}:1"]
    approvals = await store.list_approvals(task_id)
    assert [(a.seq, a.status) for a in approvals] == [
        (0, ApprovalStatus.APPROVED),
        (1, ApprovalStatus.APPROVED),
    ]
    kinds = [e.kind for e in await store.list_events(task_id)]
    assert kinds.count("approved") == 2 and kinds.count("waiting") == 2


async def test_approved_with_edited_arguments_the_tool_runs_with_them(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger, to="everyone@example.com")

    await rt.approve(task_id, edit_args={"ledger": ledger, "to": "oncall@example.com"})
    done = await rt.resume(task_id)

    assert done.result == [{"sent_to": "oncall@example.com"}]
    assert [s["to"] for s in sends(ledger)] == ["oncall@example.com"]
    op = await store.get_op(task_id, 0)
    assert op is not None and op.input == {"ledger": ledger, "to": "oncall@example.com"}
    approval = await store.get_approval(task_id, 0)
    assert approval is not None and isinstance(approval.arguments, dict)
    assert approval.arguments["to"] == "everyone@example.com"


async def test_the_call_event_shows_the_arguments_a_person_gave(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger, to="everyone@example.com")

    await rt.approve(task_id, edit_args={"ledger": ledger, "to": "oncall@example.com"})
    await rt.resume(task_id)

    events = await store.list_events(task_id)
    [approved] = [e for e in events if e.kind == "approved"]
    assert f'with the arguments {{"ledger": "{ledger}", "to": "oncall@example.com"}}' in approved.message
    [call] = [e for e in events if e.kind == "tool_call"]
    assert call.data["arguments"] == {"ledger": ledger, "to": "oncall@example.com"}
    assert call.message.startswith(f"tool call 0: send(ledger='{ledger[:20]}")


LEDGER = "the test's ledger"  # stands for the ledger's path, which only the test knows


@pytest.mark.parametrize(
    ("edited", "problem"),
    [
        ({"to": "oncall@example.com"}, "ledger: Field required"),
        ({"ledger": LEDGER, "to": 5}, "to: Input should be a valid string"),
        ({"ledger": LEDGER, "to": "oncall@example.com", "cc": "x"}, "cc: Extra inputs are not permitted"),
    ],
)
async def test_edited_arguments_that_do_not_fit_the_tool_are_refused_and_nothing_changes(
    rt: Runtime, store: StateStore, ledger: str, edited: dict[str, JsonValue], problem: str
) -> None:
    task_id = await _waiting(rt, ledger)
    edited = {key: ledger if value == LEDGER else value for key, value in edited.items()}
    before = await _snapshot(store, task_id)

    with pytest.raises(InputError, match=rf"do not fit: bad arguments for send: .*{problem}.*still waits"):
        await rt.approve(task_id, edit_args=edited)

    assert await _snapshot(store, task_id) == before
    [approval] = await store.list_approvals(task_id)
    assert (approval.status, approval.edited_arguments) == (ApprovalStatus.PENDING, None)
    assert sends(ledger) == []


async def _snapshot(store: StateStore, task_id: str) -> tuple[object, ...]:
    return (
        await store.get_task(task_id),
        await store.list_events(task_id),
        await store.list_triggers(task_id),
        await store.list_ops(task_id),
    )


def _not_here(reference: str) -> Workflow:
    """A worker's view of a workflow whose code is on another machine."""
    raise WorkflowNotFound(f"no Python file for {reference}")


async def test_edited_arguments_the_tool_is_not_here_to_check_fail_the_call_when_it_runs(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger)
    edited: dict[str, JsonValue] = {"ledger": ledger, "to": "oncall@example.com", "cc": "boss@example.com"}

    assert await check_edited_arguments(store, task_id, edited, load=_not_here) is not None
    await settle_approval(store, task_id, approve=True, edit_args=edited, load=_not_here)
    [approved] = [e for e in await store.list_events(task_id) if e.kind == "approved"]
    assert "checked when the call runs" in approved.message
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    outcomes: Any = done.result
    [outcome] = outcomes
    assert outcome["error_type"] == "NonRetryableError"
    refused = "the arguments a person approved do not fit: bad arguments for send"
    assert outcome["not_sent"].startswith(refused)
    assert "cc: Extra inputs are not permitted" in outcome["not_sent"]
    assert sends(ledger) == []  # the tool never ran with them
    op = await store.get_op(task_id, 0)
    assert op is not None and (op.status, op.input) == (OpStatus.FAILED, edited)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])  # another process decides: a shared store
async def test_edits_checked_for_a_call_another_person_decided_meanwhile_are_refused(
    tmp_path: Path, ledger: str, kind: str
) -> None:
    url = STORE_URLS[kind](tmp_path)
    try:
        async with opened(url) as store:
            task = await Runtime(store).run(mail_both, {"ledger": ledger})
            assert [a.seq for a in await store.list_approvals(task.id, pending_only=True)] == [0, 1]

            def load_while_someone_approves(reference: str) -> Workflow:
                # While the tool loads here, someone approves operation 0 and a worker runs it.
                other = threading.Thread(target=asyncio.run, args=(_approve_elsewhere(url, task.id),))
                other.start()
                other.join()
                return load_workflow(reference)

            edited: dict[str, JsonValue] = {"ledger": ledger, "to": "c@example.com"}
            with pytest.raises(InputError, match="now waits for approval of operation 1, not 0; nothing was"):
                await settle_approval(
                    store, task.id, approve=True, edit_args=edited, load=load_while_someone_approves
                )

            [second] = await store.list_approvals(task.id, pending_only=True)
            assert (second.seq, second.edited_arguments) == (1, None)
            assert [sent["to"] for sent in sends(ledger)] == ["a@example.com"]
    finally:
        discard(url)


async def _approve_elsewhere(url: str, task_id: str) -> None:
    async with Runtime(url) as other:
        await other.approve(task_id)
        assert (await other.resume(task_id)).waiting_on is WaitReason.APPROVAL  # now on operation 1


async def test_denied_the_call_fails_without_running_and_the_workflow_is_told(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger)

    await rt.deny(task_id, "not during the freeze")
    done = await rt.resume(task_id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == [
        {"not_sent": "denied by a person: not during the freeze", "error_type": "ApprovalDenied"}
    ]
    assert sends(ledger) == []
    op = await store.get_op(task_id, 0)
    assert op is not None and op.status is OpStatus.FAILED and op.attempt == 1
    assert "denied" in [e.kind for e in await store.list_events(task_id)]


async def test_deciding_what_a_task_does_not_wait_for_is_refused(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task_id = await _waiting(rt, ledger)
    with pytest.raises(InputError, match="say why"):
        await rt.deny(task_id, "  ")
    with pytest.raises(InputError, match="JSON object"):
        await rt.approve(task_id, edit_args=["not", "an", "object"])  # type: ignore[arg-type]
    await rt.approve(task_id)
    with pytest.raises(InputError, match="not waiting for an answer"):
        await rt.answer(task_id, "yes")
    await rt.resume(task_id)
    with pytest.raises(InputError, match=rf"task {task_id} is completed, not waiting for an approval"):
        await rt.approve(task_id)


async def test_a_second_decision_before_the_call_runs_says_how_and_when_it_was_decided(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    approved_id = await _waiting(rt, ledger)
    await rt.approve(approved_id)
    [decided] = await store.list_approvals(approved_id)
    triggers, events = await store.list_triggers(approved_id), await store.list_events(approved_id)
    assert decided.decided_at is not None
    when = f"{decided.decided_at.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"
    said = (
        rf"^send \(operation 0\) of task {approved_id} was approved already, at {when}; nothing was "
        rf"changed: the call runs when a running `ratchet worker` picks the task up, or with "
        rf"`ratchet resume {approved_id}`$"
    )

    with pytest.raises(AlreadyDecided, match=said):
        await rt.approve(approved_id)
    with pytest.raises(AlreadyDecided, match=said):
        await rt.approve(approved_id, edit_args={"ledger": ledger, "to": "other@example.com"})
    with pytest.raises(AlreadyDecided, match=said):
        await rt.deny(approved_id, "too late", seq=0)

    assert await store.list_approvals(approved_id) == [decided]  # nothing changed
    assert await store.list_triggers(approved_id) == triggers
    assert await store.list_events(approved_id) == events
    done = await rt.resume(approved_id)
    assert done.result == [{"sent_to": "ops@example.com"}] and len(sends(ledger)) == 1

    denied_id = await _waiting(rt, ledger)
    await rt.deny(denied_id, "release freeze")
    with pytest.raises(
        AlreadyDecided,
        match=r"^send \(operation 0\) .* was denied already, at .* UTC "
        r"\(release freeze\); nothing was changed: the call fails as denied, and the task goes on",
    ):
        await rt.approve(denied_id)


async def test_an_approval_timeout_denies_the_call_with_an_event(store: StateStore, ledger: str) -> None:
    rt = Runtime(store, approval_timeout=0.2)
    task_id = await _waiting(rt, ledger)
    [trigger] = await store.list_triggers(task_id)
    assert trigger.kind == "approval_timeout" and trigger.payload == {"seq": 0}

    await asyncio.sleep(0.3)
    await Worker(store, poll_interval=0.01).run(until_idle=True)

    task = await store.get_task(task_id)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, list) and isinstance(task.result[0], dict)
    assert task.result[0]["not_sent"] == "denied by a person: approval timed out after 0.2 s"
    assert sends(ledger) == []
    [event] = [e for e in await store.list_events(task_id) if e.kind == "approval_timed_out"]
    assert event.severity == "warning" and "send" in event.message
    approval = await store.get_approval(task_id, 0)
    assert approval is not None and approval.status is ApprovalStatus.DENIED


async def test_a_decision_before_the_timeout_stands(store: StateStore, ledger: str) -> None:
    rt = Runtime(store, approval_timeout=0.2)
    task_id = await _waiting(rt, ledger)
    await rt.approve(task_id)
    assert [t.kind for t in await store.list_triggers(task_id)] == ["wake"]  # the timeout is gone
    await asyncio.sleep(0.3)
    await Worker(store, poll_interval=0.01).run(until_idle=True)

    assert (await store.get_task(task_id)).result == [{"sent_to": "ops@example.com"}]
    assert len(sends(ledger)) == 1


async def test_a_decision_racing_the_timeout_waits_for_it_and_is_refused(
    store: StateStore, ledger: str
) -> None:
    rt = Runtime(store, approval_timeout=0.2)
    task_id = await _waiting(rt, ledger)
    await asyncio.sleep(0.3)
    claimed = asyncio.Event()

    async def worker_claims_the_timeout() -> None:
        async with store.transaction() as tx:  # as a worker's claim does: the trigger, then the rest
            [trigger] = await tx.claim_due_triggers()
            claimed.set()
            await asyncio.sleep(0.3)  # the person decides meanwhile
            assert await expire_approval(tx, trigger) is not None

    claiming = asyncio.create_task(worker_claims_the_timeout())
    await claimed.wait()
    with pytest.raises(AlreadyDecided, match=r"denied already, .* \(approval timed out after 0\.2 s\)"):
        await asyncio.wait_for(rt.approve(task_id), 10)  # waits for the claim; no deadlock
    await claiming

    approval = await store.get_approval(task_id, 0)
    assert approval is not None and approval.status is ApprovalStatus.DENIED
    assert [t.kind for t in await store.list_triggers(task_id)] == ["wake"]


# --------------------------------------------------------------------------- real processes


def _ratchet(*args: str) -> list[str]:
    return [sys.executable, "-m", "ratchet", *args]


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "RATCHET_STORE"} | {"NO_COLOR": "1"}


def _resume(url: str, task_id: str) -> subprocess.CompletedProcess[str]:
    """`ratchet resume TASK` in a process of its own."""
    return subprocess.run(
        _ratchet("resume", task_id, "--store", url),
        cwd=REPO,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def _status(url: str, task_id: str) -> tuple[TaskStatus, WaitReason | None]:
    async with await open_store(url) as store:
        task = await store.get_task(task_id)
    return task.status, task.waiting_on


def test_a_worker_killed_while_a_task_waits_then_approval_with_no_worker_then_one_send(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    ledger = str(tmp_path / "ledger.jsonl")

    async def submit() -> str:
        async with Runtime(url) as rt:
            return await rt.submit(mail, {"ledger": ledger})

    task_id = asyncio.run(submit())
    worker = subprocess.Popen(
        _ratchet("worker", "--poll", "0.05", "--store", url),
        cwd=REPO,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while asyncio.run(_status(url, task_id)) != (TaskStatus.WAITING, WaitReason.APPROVAL):
            assert worker.poll() is None and time.monotonic() < deadline, (
                "the worker never reached the approval"
            )
            time.sleep(0.05)
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()

    assert asyncio.run(_status(url, task_id)) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    early = _resume(url, task_id)
    assert early.returncode == 2 and "approval of send" in early.stderr, early.stderr

    async def approve() -> None:
        async with Runtime(url) as rt:
            await rt.approve(task_id)

    asyncio.run(approve())  # no worker runs now
    assert sends(ledger) == []
    done = _resume(url, task_id)
    assert done.returncode == 0, (done.stdout, done.stderr)
    again = _resume(url, task_id)
    assert again.returncode == 0  # already completed: its outcome, and nothing runs again
    assert [s["key"] for s in sends(ledger)] == [f"{task_id}:0"]


async def test_parallel_calls_wait_together_and_are_decided_one_at_a_time(
    rt: Runtime, store: StateStore, ledger: str
) -> None:
    task = await rt.run(mail_both, {"ledger": ledger})
    assert task.waiting_on is WaitReason.APPROVAL
    assert [a.seq for a in await store.list_approvals(task.id, pending_only=True)] == [0, 1]

    await rt.approve(task.id)  # the oldest: seq 0
    again = await rt.resume(task.id)
    assert again.waiting_on is WaitReason.APPROVAL
    assert [s["to"] for s in sends(ledger)] == ["a@example.com"]
    await rt.deny(task.id, "one is enough")
    done = await rt.resume(task.id)

    assert done.result == [{"sent_to": "a@example.com"}, "denied by a person: one is enough"]
    assert [s["to"] for s in sends(ledger)] == ["a@example.com"]
