"""ask_user: the task waits for a person's answer, asks once, and goes on with it after a restart."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import CannotResume, InputError, Runtime
from ratchet.records import OpKind, OpStatus, TaskStatus, WaitReason
from ratchet.store import StateStore, open_store

from ..helpers.people_flows import asks
from ..helpers.scripts import calls, plan, say
from .support import make_agent, model_ops, run_agent

REPO = Path(__file__).resolve().parents[2]
QUESTION = "Which region should X be deployed to?"


def _resume_in_a_new_process(url: str, task_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet", "resume", task_id, "--store", url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


async def test_the_agent_asks_once_and_the_answer_reaches_the_model_across_a_restart(
    store_url: str, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("deploy X", check="")],
                "act": [calls(("ask_user", {"question": QUESTION})), say("deployed X to eu-west-1")],
            }
        )
    )
    waiting = await run_agent(Runtime(store), agent)

    assert (waiting.status, waiting.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT), waiting.error
    assert waiting.state.open_questions == [QUESTION]
    await store.close()  # the process that asked is gone; everything below starts afresh

    early = _resume_in_a_new_process(store_url, waiting.id)
    assert early.returncode == 2 and QUESTION in early.stderr and "ratchet answer" in early.stderr, (
        early.stderr
    )
    async with Runtime(store_url) as rt:
        with pytest.raises(InputError, match="not waiting for an approval"):
            await rt.approve(waiting.id)
        queued = await rt.answer(waiting.id, "eu-west-1")
    assert queued.waiting_on is WaitReason.TIMER
    done = _resume_in_a_new_process(store_url, waiting.id)
    assert done.returncode == 0, (done.stdout, done.stderr)

    async with await open_store(store_url) as reopened:
        task = await reopened.get_task(waiting.id)
        assert task.status is TaskStatus.COMPLETED, task.error
        assert task.result == "deployed X to eu-west-1"
        assert task.state.open_questions == []
        [asked] = [op for op in await reopened.list_ops(task.id) if op.kind is OpKind.QUESTION]
        assert (asked.status, asked.input, asked.output) == (
            OpStatus.SUCCEEDED,
            {"question": QUESTION},
            "eu-west-1",
        )
        _, second = await model_ops(reopened, task.id, "act")
        assert second.input["messages"][-1] == {
            "role": "tool",
            "tool_call_id": second.input["messages"][-2]["tool_calls"][0]["id"],
            "name": "ask_user",
            "content": "eu-west-1",
        }
        events = await reopened.list_events(task.id)
        assert [e.data.get("question") for e in events if e.kind == "waiting"] == [QUESTION]  # asked once
        assert [e.kind for e in events].count("answered") == 1
        patches = [op.input["ops"][0] for op in await reopened.list_ops(task.id) if op.kind is OpKind.STATE]
        assert {"op": "resolve_question", "question": QUESTION, "answer": "eu-west-1"} in patches


async def test_ask_user_without_a_question_is_an_error_for_the_model(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("deploy X", check="")],
                "act": [calls(("ask_user", {})), say("gave up asking")],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    _, second = await model_ops(store, task.id, "act")
    assert second.input["messages"][-1]["content"].startswith("error: ask_user needs a question")


async def test_a_workflow_asks_and_resumes_with_the_answer_on_every_store(each_store: StateStore) -> None:
    rt = Runtime(each_store)
    task = await rt.run(asks, {"question": "Which region?"})
    assert task.waiting_on is WaitReason.INPUT
    with pytest.raises(CannotResume, match="an answer to 'Which region\\?'"):
        await rt.resume(task.id)

    await rt.answer(task.id, "eu")
    with pytest.raises(InputError, match="not waiting for an answer"):
        await rt.answer(task.id, "us")
    done = await rt.resume(task.id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == {"answer": "eu", "open_questions": []}
    assert [op.kind for op in await each_store.list_ops(task.id)] == [
        OpKind.STATE,
        OpKind.QUESTION,
        OpKind.STATE,
    ]
