"""Agents with memory across tasks: ``Agent(session=...)`` and ``Runtime.chat`` (docs/agent.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent, Runtime, TaskStatus
from ratchet.agent.memory import MAX_EXCHANGES
from ratchet.errors import TurnNotCompleted
from ratchet.store import StateStore

from ..helpers import session_tools
from ..helpers.agent_tools import CRASH_VARIABLE, SimulatedCrash, deploy
from ..helpers.scripts import calls, plan, say, verdict
from .support import GUARD, model_ops, request_messages

Script = Callable[[dict[str, Any]], str]


def architect(model: str | None = None) -> Agent:
    return Agent(
        "architect",
        "You design small programs.",
        tools=(session_tools.note_down, session_tools.look_up, deploy),
        model=model,
        session="architect",
    )


def one_step(*act: dict[str, Any]) -> dict[str, Any]:
    return {"plan": [plan("design it", check="")], "act": list(act), "verify": [verdict(True)]}


async def test_the_second_task_sees_the_first_ones_exchange_and_notes(
    each_store: StateStore, script: Script
) -> None:
    rt = Runtime(each_store)
    first = script(one_step(calls(("note_down", {"key": "db", "value": "postgres"})), say("use postgres")))
    second = script(one_step(calls(("look_up", {"key": "db"})), say("the db is postgres")))

    one = await asyncio.wait_for(rt.run(architect(first), instruction="choose a database"), GUARD)
    two = await asyncio.wait_for(rt.run(architect(second), instruction="what db did we choose?"), GUARD)

    assert (one.status, two.status) == (TaskStatus.COMPLETED, TaskStatus.COMPLETED), two.error
    [planned] = await model_ops(each_store, two.id, "plan")
    conversation = [(m["role"], m["content"]) for m in request_messages(planned)[1:]]
    assert conversation == [
        ("user", "choose a database"),
        ("assistant", "use postgres"),
        ("user", "what db did we choose?"),
    ]
    acted = await model_ops(each_store, two.id, "act")
    system = request_messages(acted[0])[0]["content"]
    assert "Earlier tasks in this session" in system
    assert "asked: choose a database -> result: use postgres" in system
    assert request_messages(acted[1])[-1]["content"] == "postgres"  # the tool read the session's note
    state = await rt.session("architect").state()
    assert state["notes"] == {"db": "postgres"}
    assert [(h["user"], h["assistant"], h["task_id"]) for h in state["history"]] == [
        ("choose a database", "use postgres", one.id),
        ("what db did we choose?", "the db is postgres", two.id),
    ]


async def test_chat_is_one_durable_turn_with_any_agent_on_a_session(
    each_store: StateStore, script: Script
) -> None:
    rt = Runtime(each_store)
    plain = Agent("helper", "You help.", model=script(one_step(say("hello, Ann"))))

    answer = await rt.chat(plain, "ann", "hi, I am Ann")
    again = await rt.chat(plain, "ann", "who am I?", model=script(one_step(say("you are Ann"))))

    assert (answer, again) == ("hello, Ann", "you are Ann")
    assert plain.spec.session is None  # the agent itself is not changed
    history = (await rt.session("ann").state())["history"]
    assert [h["user"] for h in history] == ["hi, I am Ann", "who am I?"]
    [planned] = await model_ops(each_store, history[1]["task_id"], "plan")
    assert [m["content"] for m in request_messages(planned)[1:3]] == ["hi, I am Ann", "hello, Ann"]


async def test_a_turn_that_fails_raises_with_its_task_and_records_nothing(
    each_store: StateStore, script: Script
) -> None:
    rt = Runtime(each_store)
    broken = Agent("helper", model=script({"plan": [{"content": "not a plan"}] * 3}))

    with pytest.raises(TurnNotCompleted, match=r"is failed: .*planning failed") as raised:
        await rt.chat(broken, "s", "do something")

    assert raised.value.task.status is TaskStatus.FAILED
    assert "history" not in await rt.session("s").state()


async def test_two_tasks_of_one_session_at_once_keep_both_exchanges_and_notes(
    url: str, script: Script
) -> None:
    red = script(one_step(calls(("note_down", {"key": "red", "value": "1"})), say("red done")))
    blue = script(one_step(calls(("note_down", {"key": "blue", "value": "2"})), say("blue done")))
    async with Runtime(url) as one, Runtime(url) as other:
        done = await asyncio.wait_for(
            asyncio.gather(
                one.run(architect(red), instruction="paint red"),
                other.run(architect(blue), instruction="paint blue"),
            ),
            GUARD,
        )
        state = await one.session("architect").state()
    assert [task.status for task in done] == [TaskStatus.COMPLETED, TaskStatus.COMPLETED]
    assert state["notes"] == {"red": "1", "blue": "2"}
    assert sorted(h["assistant"] for h in state["history"]) == ["blue done", "red done"]


async def test_a_resumed_task_keeps_the_history_it_read_and_records_its_exchange_once(
    store: StateStore, script: Script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "crash-once"
    marker.touch()
    monkeypatch.setenv(CRASH_VARIABLE, str(marker))
    rt = Runtime(store)
    await rt.chat(architect(), "architect", "first", model=script(one_step(say("first done"))))
    crashing = script(
        {
            "plan": [plan("ship", check=""), plan("wrap up", check="")],
            "act": [calls(("deploy", {"version": "v2"})), say("shipped")],
        }
    )
    with pytest.raises(SimulatedCrash):
        await asyncio.wait_for(rt.run(architect(crashing), instruction="ship v2", task_id="ship"), GUARD)
    await rt.chat(architect(), "architect", "meanwhile", model=script(one_step(say("meanwhile done"))))

    task = await asyncio.wait_for(Runtime(store).resume("ship"), GUARD)

    assert task.status is TaskStatus.COMPLETED, task.error
    acted = await model_ops(store, "ship", "act")
    system = request_messages(acted[-1])[0]["content"]
    assert "first done" in system and "meanwhile" not in system  # the history it read as it started
    history = (await rt.session("architect").state())["history"]
    assert [h["user"] for h in history] == ["first", "meanwhile", "ship v2"]


async def test_a_session_keeps_its_newest_exchanges(each_store: StateStore, script: Script) -> None:
    rt = Runtime(each_store)
    model = script(one_step(say("ok")))
    for n in range(MAX_EXCHANGES + 2):
        await rt.chat(Agent("a", model=model), "long", f"task {n}")

    history = (await rt.session("long").state())["history"]
    assert len(history) == MAX_EXCHANGES
    assert history[0]["user"] == "task 2"


async def test_a_long_session_history_is_compacted_in_the_planners_request(
    each_store: StateStore, script: Script
) -> None:
    rt = Runtime(each_store)
    earlier = [
        {"user": f"task {n}: " + "words " * 40, "assistant": f"result {n}", "task_id": f"t{n}"}
        for n in range(8)
    ]
    await rt.session("long").update(lambda state: {**state, "history": earlier})
    agent = Agent(
        "a",
        model=script({**one_step(say("ok")), "summarize": [say("summary of tasks 0 to 7")] * 2}),
        session="long",
        history_token_budget=200,
        keep_recent_messages=2,
    )

    task = await asyncio.wait_for(rt.run(agent, instruction="go on"), GUARD)

    assert task.status is TaskStatus.COMPLETED, task.error
    [planned] = await model_ops(each_store, task.id, "plan")
    sent = request_messages(planned)
    assert len(sent) < 2 + 2 * len(earlier)  # older exchanges summarized in the request ...
    assert any("Summary of the earlier messages" in str(m["content"]) for m in sent)
    assert sent[-1] == {"role": "user", "content": "go on"}  # ... the task's own instruction kept
    assert await model_ops(each_store, task.id, "summarize")
