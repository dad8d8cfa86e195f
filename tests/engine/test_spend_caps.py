"""Daily spend caps across tasks: counted from the journal's priced calls, told at 80 %, and at
the cap a new model call fails, or waits for a person's approval to go over."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet.records import CapScope, SpendCap, TaskStatus, WaitReason, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .fallback_flows import FALLBACK_FLOWS

pytestmark = pytest.mark.parametrize("store_kind", ["sqlite", "postgres"])

ASK, ASK_TOO = f"{FALLBACK_FLOWS}:ask", f"{FALLBACK_FLOWS}:ask_too"


def priced(cost: float, turns: int) -> dict[str, Any]:
    """A script whose every answer costs `cost` US dollars."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "cost": cost}
    return {"act": [{"content": f"answer {n}", "usage": usage} for n in range(turns)]}


async def events_of(store: StateStore, task_id: str, kind: str) -> list[Any]:
    return [e for e in await store.list_events(task_id) if e.kind == kind]


async def spent(store: StateStore, target: str) -> float:
    found = {s.cap.target: s.spent for s in await store.list_spend_caps(day=utcnow().date())}
    return found[target]


async def test_an_agent_s_cap_tells_its_pressure_once_then_fails_its_next_call_and_leaves_others_alone(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="ask", daily=1.0))

    first = await rt.run(ASK, {"times": 2}, model=script(priced(0.45, 2)))
    assert first.status is TaskStatus.COMPLETED, first.error
    assert await spent(store, "agent:ask") == pytest.approx(0.9)
    assert not await events_of(store, first.id, "spend_cap_pressure")  # 0.45 when its second call began

    second = await Runtime(store).run(ASK, {"times": 1}, model=script(priced(0.45, 1)))  # another "worker"
    assert second.status is TaskStatus.COMPLETED, second.error
    (told,) = await events_of(store, second.id, "spend_cap_pressure")
    assert told.data["cap"] == "agent:ask" and "0.9 of 1 USD" in told.message

    third = await rt.run(ASK, {"times": 1}, model=script(priced(0.45, 1)))
    assert third.status is TaskStatus.FAILED
    assert "spend cap agent:ask reached: 1.35 of 1 USD" in (third.error or "")
    assert "ratchet budget set --agent ask --daily USD" in (third.error or "")
    assert not await events_of(store, third.id, "spend_cap_pressure")  # once a day, told already
    assert await store.list_ops(third.id) == []  # the call never started

    other = await rt.run(ASK_TOO, {"times": 2}, model=script(priced(5.0, 2)))
    assert other.status is TaskStatus.COMPLETED, other.error
    assert await spent(store, "agent:ask") == pytest.approx(1.35)


async def test_a_label_s_cap_with_approve_over_waits_for_a_person_who_lets_the_task_go_over(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=red", daily=0.5, approve_over=True))
    red = {"team": "red"}

    task = await rt.run(ASK, {"times": 3}, model=script(priced(0.6, 3)), labels=red)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    (pending,) = await store.list_approvals(task.id, pending_only=True)
    assert pending.tool == "model:act" and pending.arguments == {
        "spend_caps": ["label:team=red"],
        "day": utcnow().date().isoformat(),
    }
    assert "spend cap label:team=red reached: 0.6 of 0.5 USD" in pending.why
    await rt.approve(task.id)

    done = await rt.resume(task.id)

    assert done.status is TaskStatus.COMPLETED, done.error
    assert done.result == ["answer 0", "answer 1", "answer 2"]  # approved once for the day
    assert await spent(store, "label:team=red") == pytest.approx(1.8)

    unlabelled = await rt.run(ASK, {"times": 1}, model=script(priced(0.6, 1)))
    assert unlabelled.status is TaskStatus.COMPLETED, unlabelled.error
    denied = await rt.run(ASK, {"times": 1}, model=script(priced(0.6, 1)), labels=red)
    assert denied.status is TaskStatus.WAITING
    await rt.deny(denied.id, "enough for today")
    ended = await rt.resume(denied.id)
    assert ended.status is TaskStatus.FAILED
    assert "a person denied going over: enough for today" in (ended.error or "")


async def test_unpriced_calls_count_nothing(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="ask", daily=0.01))
    unpriced = script({"act": [{"content": "free"}, {"content": "free"}]})

    task = await rt.run(ASK, {"times": 2}, model=unpriced)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert await spent(store, "agent:ask") == 0.0


async def test_a_label_s_cap_counts_the_tasks_with_that_label_whatever_their_agent(
    store: StateStore, rt: Runtime, script: Callable[[dict[str, Any]], str]
) -> None:
    await store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=blue", daily=1.0))
    blue, green = {"team": "blue"}, {"team": "green"}

    first = await rt.run(ASK, {"times": 2}, model=script(priced(0.45, 2)), labels=blue)
    second = await rt.run(ASK_TOO, {"times": 1}, model=script(priced(0.45, 1)), labels=blue)
    third = await rt.run(ASK, {"times": 1}, model=script(priced(0.45, 1)), labels=blue)
    green_task = await rt.run(ASK, {"times": 1}, model=script(priced(0.45, 1)), labels=green)

    assert [t.status for t in (first, second, third, green_task)] == [
        TaskStatus.COMPLETED,
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
        TaskStatus.COMPLETED,
    ]
    (told,) = await events_of(store, second.id, "spend_cap_pressure")
    assert told.data["cap"] == "label:team=blue"
    assert "spend cap label:team=blue reached: 1.35 of 1 USD" in (third.error or "")
    assert "ratchet budget set --label team=blue --daily USD" in (third.error or "")
    assert await spent(store, "label:team=blue") == pytest.approx(1.35)
