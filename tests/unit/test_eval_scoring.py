"""The eval's scorers and its `--where`, as plain functions: what each answer of a scorer means."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import JsonValue

from ratchet.cli.evals import where_filter
from ratchet.errors import InputError
from ratchet.records import TaskStatus
from ratchet.runtime.evals import EvalRun, EvalToolCall, Verdict
from ratchet.runtime.evals.scoring import Scorer, judge, structural_diff

RECORDED = EvalRun(
    task_id="t-1",
    status="completed",
    result={"total": 3},
    tool_calls=[EvalToolCall(name="add", arguments={"a": 1, "b": 2})],
)


def scored_by(answer: Any) -> tuple[Verdict, float, list[str]]:
    score = judge(Scorer("mine", lambda recorded, candidate: answer), RECORDED, RECORDED)
    return score.verdict, score.score, score.differences


def test_a_scorers_answer_is_a_bool_a_number_from_0_to_1_or_a_dict() -> None:
    assert scored_by(True) == (Verdict.MATCH, 1.0, [])
    assert scored_by(False) == (Verdict.DIFF, 0.0, [])
    assert scored_by(1) == (Verdict.MATCH, 1.0, [])
    assert scored_by(0.75) == (Verdict.DIFF, 0.75, [])
    assert scored_by({"match": True}) == (Verdict.MATCH, 1.0, [])
    assert scored_by({"match": False, "score": 0.5, "differences": ["tone"]}) == (Verdict.DIFF, 0.5, ["tone"])
    for odd in (2, -1, "yes", None, {"score": 1}, {"match": "yes"}):
        verdict, score, [said] = scored_by(odd)
        assert (verdict, score) == (Verdict.DIFF, 0.0)
        assert said.startswith("the scorer mine returned ") and "return a bool" in said


def test_a_scorer_that_raises_makes_its_task_a_diff() -> None:
    def broken(recorded: EvalRun, candidate: EvalRun) -> bool:
        raise KeyError("answer")

    assert judge(Scorer("broken", broken), RECORDED, RECORDED).differences == [
        "the scorer raised KeyError: 'answer'"
    ]


def test_a_new_run_that_stopped_is_a_diff_before_any_scorer() -> None:
    stopped = RECORDED.model_copy(
        update={"status": "stopped", "stopped": "tool call not in the recording: x()"}
    )

    score = judge(Scorer("always", lambda recorded, candidate: True), RECORDED, stopped)

    assert (score.verdict, score.differences) == (Verdict.DIFF, ["tool call not in the recording: x()"])


def test_structural_diff_names_each_difference_by_its_path() -> None:
    old: JsonValue = {"items": [{"price": 3}, {"price": 4}], "note": None, "kept": "x"}
    new: JsonValue = {"items": [{"price": 3}, {"price": 5}, {"price": 6}], "extra": True, "kept": "x"}

    assert structural_diff(old, new) == [
        "$.extra: only in the new run (true)",
        "$.items[1].price: recorded 4, new 5",
        '$.items[2]: only in the new run ({"price": 6})',
        "$.note: only in the recording (null)",
    ]
    assert structural_diff(1, 1.0) == ["$: recorded 1, new 1.0"]  # JSON keeps an integer apart
    assert structural_diff({"a": [1]}, {"a": [1]}) == []


def test_where_reads_the_filters_of_tasks_as_fields() -> None:
    where = where_filter(["status=completed", "status=failed", "label=team=ops", "agent=triage", "since=2h"])

    assert where is not None
    assert where.statuses == {TaskStatus.COMPLETED, TaskStatus.FAILED}
    assert where.labels == (("team", "ops"),)
    assert where.agent == "triage" and where.since is not None
    assert where_filter([]) is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["agent=a", "agent=b"], "--where agent= is given twice"),
        (["status=done"], "--where status: unknown status 'done'"),
        (["=x"], "write FIELD=VALUE"),
        (["label=nolabel"], "--where label"),
        (["min-cost=-1"], "--where min-cost"),
    ],
)
def test_a_bad_where_is_one_line_naming_it(given: list[str], said: str) -> None:
    with pytest.raises(InputError) as raised:
        where_filter(given)
    assert said in str(raised.value) and "\n" not in str(raised.value)
