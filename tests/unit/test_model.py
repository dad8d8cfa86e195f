"""The records: JSON round trip, status machines, state patches, plan validation."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pydantic import ValidationError

from ratchet.errors import InvalidTransition, StatePatchError
from ratchet.policy import Budget
from ratchet.records import (
    AgentState,
    ArtifactRef,
    Fact,
    Lease,
    OpStatus,
    Plan,
    PlanStep,
    Record,
    StatePatch,
    StepStatus,
    Task,
    TaskStatus,
    WaitReason,
    check_step_move,
    check_task_move,
)

from ..helpers.builders import (
    at,
    make_artifact,
    make_checkpoint,
    make_event,
    make_message,
    make_op,
    make_session,
    make_step,
    make_task,
    make_trigger,
)

TS, SS = TaskStatus, StepStatus

# ------------------------------------------------------------------ JSON round trip

WAITING_TASK = make_task(
    "t1",
    status=TS.WAITING,
    waiting_on=WaitReason.APPROVAL,
    goal="g",
    inputs_params={"n": [1, 2.5, None, "é"]},
    result={"ok": True},
    deadline=at(60),
    budget=Budget(max_steps=3, max_cost=1.5),
)
FULL_STATE = AgentState(
    goal="g",
    plan=["a", "b"],
    known_facts=[Fact(key="k", value={"v": 1})],
    open_questions=["why?"],
    artifacts=[ArtifactRef(artifact_id="a1", type="log", summary="s", bytes=3)],
    risk_flags=["budget_pressure"],
)
NEW_REF = {"artifact_id": "a2", "type": "t", "summary": "s", "bytes": 0}
ALL_OPS_PATCH = StatePatch.model_validate(
    {
        "ops": [
            {"op": "append_facts", "facts": [{"key": "k", "value": 1}]},
            {"op": "replace_plan", "plan": ["x"]},
            {"op": "add_open_questions", "questions": ["q"]},
            {"op": "resolve_question", "question": "q", "answer": "a"},
            {"op": "add_artifact", "artifact": NEW_REF},
            {"op": "set_risk_flag", "flag": "f", "value": False},
        ]
    }
)
RECORDS: list[Record] = [
    make_task("t0"),
    WAITING_TASK,
    make_step("t1", 2, status=SS.FAILED, failure_message="no", attempts=2),
    Plan(goal="g", steps=[PlanStep(step_name="s", description="d")]),
    make_op("t1", 0),
    make_op("t1", 1, OpStatus.SUCCEEDED, output=[1, {"a": None}]),
    make_op("t1", 2, OpStatus.FAILED),
    make_message("t1", "hi", role="assistant", tool_calls=[{"id": "c", "name": "f"}]),
    make_event("t1", data={"x": [1, 2]}),
    make_artifact("a1", "t1", bytes=10),
    make_trigger(at(5), task_id="t1", payload={"k": "v"}, dedupe_key="d", id=7),
    make_checkpoint(WAITING_TASK, number=3, last_seq=9, state=FULL_STATE),
    make_session("s1", version=4),
    Lease(task_id="t1", owner="w", token=3, expires_at=at(30), host="h", pid=1, released=True),
    FULL_STATE,
    ALL_OPS_PATCH,
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_json_round_trip(record: Record) -> None:
    assert type(record).from_json(record.to_json()) == record
    assert type(record).from_json(record.to_json().encode()) == record


def test_records_are_frozen_and_strict() -> None:
    task = make_task()
    with pytest.raises(ValidationError):
        task.status = TS.RUNNING
    with pytest.raises(ValidationError):
        make_task(colour="blue")


# ------------------------------------------------------------------ task status machine

TASK_MOVES = {
    (TS.QUEUED, TS.RUNNING), (TS.QUEUED, TS.FAILED), (TS.QUEUED, TS.CANCELLED),
    (TS.RUNNING, TS.WAITING), (TS.RUNNING, TS.COMPLETED), (TS.RUNNING, TS.FAILED),
    (TS.RUNNING, TS.CANCELLED),
    (TS.WAITING, TS.RUNNING), (TS.WAITING, TS.WAITING), (TS.WAITING, TS.FAILED),
    (TS.WAITING, TS.CANCELLED),
}  # fmt: skip


def _task_in(status: TaskStatus) -> Task:
    return make_task(status=status, waiting_on=WaitReason.INPUT if status is TS.WAITING else None)


def _move(task: Task, status: TaskStatus) -> Task:
    return task.transition(status, waiting_on=WaitReason.TIMER if status is TS.WAITING else None)


@pytest.mark.parametrize(("old", "new"), sorted(TASK_MOVES))
def test_legal_task_moves(old: TaskStatus, new: TaskStatus) -> None:
    before = _task_in(old)
    after = _move(before, new)
    assert after.status is new
    assert after.waiting_on == (WaitReason.TIMER if new is TS.WAITING else None)
    assert before.status is old
    assert after.updated_at >= before.updated_at


@pytest.mark.parametrize(("old", "new"), sorted(set(itertools.product(TS, TS)) - TASK_MOVES))
def test_illegal_task_moves_raise(old: TaskStatus, new: TaskStatus) -> None:
    with pytest.raises(InvalidTransition):
        _move(_task_in(old), new)


def test_terminal_statuses() -> None:
    assert {s for s in TS if s.is_terminal} == {TS.COMPLETED, TS.FAILED, TS.CANCELLED}


def test_waiting_must_say_on_what() -> None:
    running = _task_in(TS.RUNNING)
    with pytest.raises(InvalidTransition):
        running.transition(TS.WAITING)
    with pytest.raises(InvalidTransition):
        running.transition(TS.COMPLETED, waiting_on=WaitReason.APPROVAL)
    with pytest.raises(ValidationError):
        make_task(status=TS.WAITING)
    with pytest.raises(ValidationError):
        make_task(status=TS.RUNNING, waiting_on=WaitReason.INPUT)


def test_transition_applies_changes_and_shows_status() -> None:
    waiting = _task_in(TS.RUNNING).transition(TS.WAITING, waiting_on=WaitReason.APPROVAL)
    assert waiting.status_text == "waiting(approval)"
    done = waiting.transition(TS.RUNNING).transition(TS.COMPLETED, result={"answer": 42})
    assert (done.status_text, done.result, done.waiting_on) == ("completed", {"answer": 42}, None)
    assert WaitReason.APPROVAL.needs_person and not WaitReason.TIMER.needs_person


# ------------------------------------------------------------------ step status machine

STEP_MOVES = {
    (SS.PENDING, SS.CURRENT), (SS.PENDING, SS.SKIPPED), (SS.PENDING, SS.CANCELLED),
    (SS.CURRENT, SS.COMPLETED), (SS.CURRENT, SS.FAILED), (SS.CURRENT, SS.SKIPPED),
    (SS.CURRENT, SS.CANCELLED),
}  # fmt: skip


@pytest.mark.parametrize(("old", "new"), sorted(STEP_MOVES))
def test_legal_step_moves(old: StepStatus, new: StepStatus) -> None:
    step = make_step("t1", 0, status=old)
    moved = step.transition(new, attempts=1)
    assert moved == step.model_copy(update={"status": new, "attempts": 1})


@pytest.mark.parametrize(("old", "new"), sorted(set(itertools.product(SS, SS)) - STEP_MOVES))
def test_illegal_step_moves_raise(old: StepStatus, new: StepStatus) -> None:
    with pytest.raises(InvalidTransition):
        make_step("t1", 0, status=old).transition(new)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(TS, TS)))
def test_stored_task_may_stay_in_a_live_status(old: TaskStatus, new: TaskStatus) -> None:
    if (old, new) in TASK_MOVES or (old is new and not old.is_terminal):
        check_task_move("t1", old, new)
    else:
        with pytest.raises(InvalidTransition):
            check_task_move("t1", old, new)


@pytest.mark.parametrize(("old", "new"), list(itertools.product(SS, SS)))
def test_stored_step_may_stay_in_a_live_status(old: StepStatus, new: StepStatus) -> None:
    if (old, new) in STEP_MOVES or (old is new and not old.is_terminal):
        check_step_move("step 0 of task t1", old, new)
    else:
        with pytest.raises(InvalidTransition):
            check_step_move("step 0 of task t1", old, new)


# ------------------------------------------------------------------ state patches


def _patch(*ops: dict[str, Any]) -> StatePatch:
    return StatePatch.model_validate({"ops": list(ops)})


def test_append_facts_appends() -> None:
    state = _patch({"op": "append_facts", "facts": [{"key": "b", "value": 2}]}).apply(FULL_STATE)
    assert [f.key for f in state.known_facts] == ["k", "b"]


def test_replace_plan_replaces() -> None:
    assert _patch({"op": "replace_plan", "plan": ["z"]}).apply(FULL_STATE).plan == ["z"]


def test_add_open_questions_skips_known_ones() -> None:
    patch = _patch({"op": "add_open_questions", "questions": ["why?", "how?"]})
    assert patch.apply(FULL_STATE).open_questions == ["why?", "how?"]


def test_resolve_question_removes_it() -> None:
    state = _patch({"op": "resolve_question", "question": "why?", "answer": "because"}).apply(FULL_STATE)
    assert state.open_questions == []


def test_add_artifact_adds_once() -> None:
    state = _patch({"op": "add_artifact", "artifact": NEW_REF}).apply(FULL_STATE)
    assert [a.artifact_id for a in state.artifacts] == ["a1", "a2"]
    with pytest.raises(StatePatchError):
        _patch({"op": "add_artifact", "artifact": NEW_REF}).apply(state)


def test_set_risk_flag_sets_once_and_clears() -> None:
    set_x = {"op": "set_risk_flag", "flag": "x"}
    state = _patch(set_x, set_x).apply(FULL_STATE)
    assert state.risk_flags == ["budget_pressure", "x"]
    clear = {"op": "set_risk_flag", "flag": "budget_pressure", "value": False}
    cleared = _patch(clear).apply(state)
    assert cleared.risk_flags == ["x"]


def test_patch_is_atomic() -> None:
    before = FULL_STATE.model_dump()
    patch = _patch(
        {"op": "add_open_questions", "questions": ["new?"]},
        {"op": "resolve_question", "question": "not open"},
    )
    with pytest.raises(StatePatchError):
        patch.apply(FULL_STATE)
    assert FULL_STATE.model_dump() == before


def test_patch_is_pure() -> None:
    before = FULL_STATE.model_dump()
    first = ALL_OPS_PATCH.apply(FULL_STATE)
    second = ALL_OPS_PATCH.apply(FULL_STATE)
    assert first == second
    assert first != FULL_STATE
    assert FULL_STATE.model_dump() == before


def test_empty_or_unknown_patches_are_rejected() -> None:
    with pytest.raises(ValidationError):
        StatePatch(ops=[])
    with pytest.raises(ValidationError):
        _patch({"op": "delete_everything"})


# ------------------------------------------------------------------ plans


def test_plan_without_steps_is_rejected() -> None:
    with pytest.raises(ValidationError):
        Plan.model_validate({"goal": "g", "steps": []})
    with pytest.raises(ValidationError):
        Plan.model_validate({"goal": "g"})


def test_plan_step_needs_a_name() -> None:
    with pytest.raises(ValidationError):
        Plan.model_validate({"steps": [{"step_name": "", "description": "d"}]})


def test_plan_ignores_extra_keys_from_the_model() -> None:
    plan = Plan.model_validate(
        {"goal": "g", "steps": [{"step_name": "s", "why": "model chatter"}], "notes": "x"}
    )
    assert plan.steps == [PlanStep(step_name="s")]


@pytest.mark.parametrize("value", ["service X", ["a", "b"], {"service": "X"}, 3, None])
def test_plan_takes_any_json_for_inputs_params_and_context(value: object) -> None:
    plan = Plan.model_validate({"inputs_params": value, "context": value, "steps": [{"step_name": "s"}]})
    assert (plan.inputs_params, plan.context) == (value, value)
