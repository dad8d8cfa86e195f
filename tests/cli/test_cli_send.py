"""`ratchet send`: a message to a running task, as a real program; `ratchet show` lists those not received."""

from __future__ import annotations

import json

from ratchet import Runtime, TaskStatus, WaitReason

from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import flow, with_runtime, with_store


def _waiting_collector(url: str) -> str:
    async def start(rt: Runtime) -> str:
        task_id = await rt.submit(flow("receiver"), {"count": 1}, queue=False)
        assert (await rt.resume(task_id)).waiting_on is WaitReason.MESSAGE
        return task_id

    return with_runtime(url, start)


def test_send_wakes_a_task_waiting_for_the_message(run_ratchet: RunRatchet, url: str) -> None:
    task_id = _waiting_collector(url)

    other = run_ratchet("send", task_id, "later", "--store", url)  # no JSON: null
    shown = run_ratchet("show", task_id, "--json", "--store", url)
    text = run_ratchet("show", task_id, "--store", url)
    sent = run_ratchet("send", task_id, "item", '{"n": 1}', "--store", url)
    done = run_ratchet("resume", task_id, "--store", url)

    assert other.returncode == 0, other.stderr
    assert "sent 'later' #1" in other.stdout
    pending = json.loads(shown.stdout)["pending_messages"]
    assert [(m["seq"], m["name"], m["payload"]) for m in pending] == [(1, "later", None)]
    assert "Messages not received yet (1):" in text.stdout and "#1 later: null" in text.stdout
    assert sent.returncode == 0, sent.stderr
    assert done.returncode == 0, done.stderr
    task = with_store(url, lambda store: store.get_task(task_id))
    assert (task.status, task.result) == (TaskStatus.COMPLETED, [{"n": 1}])


def test_send_refuses_bad_json_an_unknown_task_and_an_ended_one(run_ratchet: RunRatchet, url: str) -> None:
    task_id = _waiting_collector(url)

    assert_one_line_error(run_ratchet("send", task_id, "item", "{oops", "--store", url), "not JSON")
    assert_one_line_error(run_ratchet("send", "no-such-task", "item", "1", "--store", url), "no-such-task")
    assert run_ratchet("send", task_id, "item", "1", "--store", url).returncode == 0
    assert run_ratchet("resume", task_id, "--store", url).returncode == 0
    assert_one_line_error(run_ratchet("send", task_id, "item", "2", "--store", url), "already completed")
    inbox = with_store(url, lambda store: store.list_inbox(task_id))
    assert [m.payload for m in inbox] == [1]
