"""The context slice: what a step's prompt carries of the working memory, within its byte budget.

The slice function is checked directly (the budget, in UTF-8 bytes, and the
order of precedence), then through a real agent run on memory and SQLite:
artifacts record the step that made them, and a later step's prompt carries
exactly the slice, under the budget, with the note on what was left out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Budget, Runtime, TaskStatus
from ratchet.agent.context_slice import references, state_slice
from ratchet.records import AgentState, ArtifactRef, Fact, Step
from ratchet.store import StateStore

from ..helpers.scripts import calls, plan_step, say, verdict
from .support import make_agent, model_ops, run_agent

LIMIT = 1000


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    """The agent suite runs on SQLite; this behaviour is held on memory too."""
    return str(request.param)


def _artifact(n: int, step: int | None = 0) -> ArtifactRef:
    summary = f"journal {n}: café déjà vu, 日本語のログ " * 3  # several bytes a character
    kind = "tool_result.fetch_logs"
    return ArtifactRef(artifact_id=f"t-artifact-{n}", type=kind, summary=summary, bytes=5000 + n, step=step)


def _step(index: int = 1, instruction: str = "go on") -> Step:
    return Step(task_id="t", index=index, name=f"step {index + 1}", action_instruction=instruction)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def test_thirty_artifacts_fit_a_thousand_bytes_with_a_note_on_the_rest() -> None:
    state = AgentState(artifacts=[_artifact(n) for n in range(1, 31)])
    text = state_slice(state, _step(), LIMIT)

    assert _size(text) <= LIMIT and len(text) < _size(text)  # counted in bytes, not characters
    shown = [n for n in range(1, 31) if f"t-artifact-{n} " in text]
    assert shown and len(shown) < 30
    assert shown == list(range(31 - len(shown), 31))  # the newest
    assert f"Left out to keep this within {LIMIT} bytes: {30 - len(shown)} artifacts." in text
    assert "read_state" in text and "read_artifact" in text


def test_the_budget_holds_at_every_size() -> None:
    state = AgentState(
        open_questions=["Which region?", "Is the cache warm?"],
        known_facts=[Fact(key=f"k{n}", value={"n": n, "text": "ü" * n}) for n in range(40)],
        artifacts=[_artifact(n, step=n % 3) for n in range(30)],
    )
    for limit in [*range(0, 400, 7), *range(400, 6000, 113), 100_000]:
        assert _size(state_slice(state, _step(), limit)) <= limit
    assert "Left out" not in state_slice(state, _step(), 100_000)


def test_the_steps_artifacts_then_newest_facts_then_other_artifacts() -> None:
    named = _artifact(1, step=0)
    made = _artifact(2, step=1)
    others = [_artifact(n, step=0) for n in range(3, 10)]
    facts = [Fact(key=f"fact{n}", value="v" * 40) for n in range(12)]
    state = AgentState(known_facts=facts, artifacts=[named, made, *others])
    step = _step(1, instruction=f"compare with {named.artifact_id}")
    assert references(step, named) and references(step, made) and not references(step, others[0])
    assert not references(_step(1, instruction="read t-artifact-10 and t-artifact-11"), named)
    assert references(_step(1, instruction="read t-artifact-1."), named)

    text = state_slice(state, step, 900)

    assert _size(text) <= 900
    own, rest = text.split("Known facts (newest first):")
    assert "t-artifact-2 " in own and "t-artifact-1 " in own and "made by step 2" in own
    assert "- fact11:" in rest  # the newest fact ...
    kept = [n for n in range(12) if f"- fact{n}:" in rest]
    assert kept == list(range(12 - len(kept), 12))  # ... and those after it, newest first
    assert "Other artifacts" not in text or len(kept) == 12  # facts go before other artifacts
    assert "Left out" in text and "artifacts" in text.split("Left out")[1]


def test_an_entry_too_large_is_left_out_and_smaller_ones_still_go_in() -> None:
    state = AgentState(known_facts=[Fact(key="small", value="s"), Fact(key="huge", value="h" * 5000)])
    text = state_slice(state, _step(), 300)
    assert "- small:" in text and "huge" not in text and ": 1 fact." in text


def test_nothing_to_carry_is_an_empty_slice_and_a_tiny_budget_carries_nothing() -> None:
    assert state_slice(AgentState(), _step(), LIMIT) == ""
    assert state_slice(AgentState(artifacts=[_artifact(1)]), _step(), 10) == ""


def _big_outputs_script(task_id: str) -> dict[str, Any]:
    """Step 1 fetches logs twelve times, two at a time, and records ten facts; step 2 names an artifact.

    Each log is kept as an artifact: a 5000-byte one by the journal, a 1500-byte one by the loop.
    """
    fetch = [("fetch_logs", {"service": f"S{n}", "size": 1500 if n % 2 else 5000}) for n in range(12)]
    fetches = [calls(*fetch[n : n + 2]) for n in range(0, 12, 2)]
    findings = [{"key": f"finding{n}", "value": f"service S{n} answers in {n} ms"} for n in range(10)]
    second = {**plan_step("compare"), "action_instruction": f"compare the logs of {task_id}-artifact-4"}
    return {
        "plan": [{"content": {"goal": "logs read", "steps": [plan_step("fetch"), second]}}],
        "act": [
            *fetches,
            calls(("update_state", {"ops": [{"op": "append_facts", "facts": findings}]})),
            say("fetched"),
            calls(("read_state", {"part": "artifacts"})),
            say("compared"),
        ],
        "verify": [verdict(True), verdict(True)],
    }


async def test_an_agent_step_prompt_carries_the_slice_within_the_budget(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    task_id = "ops-slice"
    budget = Budget(max_artifact_bytes_in_context=LIMIT, max_inline_result_bytes=2000)
    agent = make_agent(script(_big_outputs_script(task_id)), budget=budget)
    task = await run_agent(Runtime(store), agent, task_id=task_id)
    assert task.status is TaskStatus.COMPLETED, task.error

    stored = await store.list_artifacts(task.id)
    assert len(stored) == 12 and {a.step for a in stored} == {0}
    assert {a.id.split("-")[-2] for a in stored} == {"artifact", "result"}  # by the loop and the journal
    assert [ref.step for ref in task.state.artifacts] == [0] * 12
    compare = (await store.list_steps(task.id))[1]
    expected = state_slice(task.state, compare, LIMIT)
    assert _size(expected) <= LIMIT and "Left out" in expected
    assert f"{task_id}-artifact-4 " in expected.split("Known facts")[0]  # named by the step: first

    acts = await model_ops(store, task.id, "act")
    system = acts[-1].input["messages"][0]["content"]  # step 2's prompt
    # The earlier steps' reports share the budget: the slice gets what they leave, at most LIMIT.
    carried = [b for b in range(LIMIT, 0, -1) if (s := state_slice(task.state, compare, b)) and s in system]
    assert carried, "the prompt carries no slice of the state"
    assert f"{task_id}-artifact-4 " in state_slice(task.state, compare, carried[0])

    reply = acts[-1].input["messages"][-1]  # what read_state gave: a page that fits the prompt
    assert reply["name"] == "read_state" and _size(reply["content"]) <= LIMIT
    page = json.loads(reply["content"])
    assert (page["total"], page["offset"]) == (12, 0) and 0 < len(page["entries"]) < 12
    assert page["next_offset"] == len(page["entries"])
    newest = task.state.artifacts[-1]
    assert page["entries"][0] == newest.model_dump(mode="json") and newest.step == 0
