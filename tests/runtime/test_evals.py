"""`Runtime.evaluate` on PostgreSQL: the typed report, no tool run, and not one row of the store changed.

The tasks are recorded for real (`ratchet run`, tests/helpers/eval_recordings.py);
the eval runs here, in this process, as a program calls it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ratchet
from ratchet.errors import InputError
from ratchet.runtime.evals import EvalReport, Verdict

from ..helpers.eval_recordings import NEW_MODEL, appended, record, write_files
from ..helpers.raw_sql import change_task_record, run_sql
from . import eval_flows


def every_row(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Each table of the store's schema: how many rows, and a digest of them all."""
    tables = [name for (name,) in run_sql(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    return {
        table: run_sql(
            url,
            f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t",
        )
        for table in sorted(tables)
    }


async def test_eval_on_postgresql_reads_the_store_and_writes_nothing(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path)
    same, changed = record(tmp_path, postgres_url, same=1, changed=1)
    monkeypatch.chdir(tmp_path)  # the project root the tasks were recorded in: their tools and scripts
    lines, rows = appended(tmp_path), every_row(postgres_url)

    async with ratchet.Runtime(postgres_url) as rt:
        report = await rt.evaluate(NEW_MODEL)
        labelled = await rt.evaluate(NEW_MODEL, scorer="json-diff", labels={"kind": "same"})
        with pytest.raises(InputError, match="no task matches"):
            await rt.evaluate(NEW_MODEL, status="failed")
        with pytest.raises(InputError, match="names no model"):
            await rt.evaluate("scripted:")

    assert isinstance(report, EvalReport)
    assert [(t.task_id, t.verdict) for t in report.tasks] == [(same, Verdict.MATCH), (changed, Verdict.DIFF)]
    assert report.tasks[1].differences == ["tool call not in the recording: append(line='two')"]
    assert [c.described() for c in report.tasks[1].recorded.tool_calls] == [
        "append(line='one')",
        "append(line='TWO')",
    ]
    assert (report.totals.matches, report.totals.diffs) == (1, 1)
    assert [(t.task_id, t.verdict) for t in labelled.tasks] == [(same, Verdict.MATCH)]
    assert appended(tmp_path) == lines
    assert every_row(postgres_url) == rows


# --------------------------------------------------------------------------- which recorded call answers


def act_script(directory: Path, name: str, *lines: str) -> str:
    """A script whose one `act` answer calls `append` with each line, at once; return its model string."""
    calls = [{"name": "append", "arguments": {"line": line}} for line in lines]
    (directory / name).write_text(json.dumps({"act": [{"content": "done", "tool_calls": calls}]}))
    return f"scripted:{directory / name}"


@pytest.fixture
def tool_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs = tmp_path / "runs.txt"
    monkeypatch.setenv(eval_flows.RUNS_VARIABLE, str(runs))
    return runs


async def test_each_call_is_answered_by_the_first_unused_recorded_call_of_its_name_and_arguments(
    tmp_path: Path, tool_runs: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    recorded_model = act_script(tmp_path, "recorded.json", "one", "boom", "two")
    async with ratchet.Runtime(url) as rt:
        task = await rt.run(eval_flows.follow_the_model, model=recorded_model)
        assert task.result == {
            "content": "done",
            "results": ["appended one", "failed: no line may say boom", "appended two"],
        }
        runs = tool_runs.read_text()

        same = await rt.evaluate(recorded_model)
        reordered = await rt.evaluate(act_script(tmp_path, "reordered.json", "two", "one", "boom"))
        by_structure = await rt.evaluate(
            act_script(tmp_path, "reordered.json", "two", "one", "boom"), scorer="json-diff"
        )
        twice = await rt.evaluate(act_script(tmp_path, "twice.json", "one", "one"))

    [same_task] = same.tasks
    assert same_task.verdict is Verdict.MATCH
    assert same_task.candidate.result == task.result  # the recorded failure was served as the same failure
    assert [c.error is not None for c in same_task.candidate.tool_calls] == [False, True, False]
    [moved] = reordered.tasks
    assert moved.candidate.stopped is None  # every call had its recorded answer
    assert moved.candidate.result == {
        "content": "done",
        "results": ["appended two", "appended one", "failed: no line may say boom"],
    }
    assert moved.differences == ["tool call 1: recorded append(line='one'), new append(line='two')"]
    assert by_structure.tasks[0].differences == [
        '$.results[0]: recorded "appended one", new "appended two"',
        '$.results[1]: recorded "failed: no line may say boom", new "appended one"',
        '$.results[2]: recorded "appended two", new "failed: no line may say boom"',
    ]
    [again] = twice.tasks
    assert again.differences == ["tool call not in the recording: append(line='one')"]
    assert [c.described() for c in again.candidate.tool_calls] == ["append(line='one')", "append(line='one')"]
    assert tool_runs.read_text() == runs  # no tool ran in any eval


def test_sync_runtime_evals_as_runtime_does(tmp_path: Path, tool_runs: Path) -> None:
    model = act_script(tmp_path, "recorded.json", "one")
    with ratchet.SyncRuntime(f"sqlite:///{tmp_path / 'ratchet.db'}") as rt:
        ran = rt.run(eval_flows.follow_the_model, model=model, name="follow")
        queued = rt.submit(eval_flows.follow_the_model, model=model, name="follow")  # it never ran
        report = rt.evaluate(act_script(tmp_path, "other.json", "uno"), name="follow")
        unrun = rt.evaluate(model, status="queued")  # asked for by status: taken, though it recorded nothing

    # Without a status among the filters, only the completed tasks are taken.
    [only] = report.tasks
    assert only.task_id == ran.id
    assert only.differences == ["tool call not in the recording: append(line='uno')"]
    [nothing] = unrun.tasks
    assert nothing.task_id == queued
    assert nothing.differences == ["tool call not in the recording: append(line='one')"]
    assert tool_runs.read_text() == "one\n"


async def test_a_task_whose_seal_does_not_hold_is_not_run(tmp_path: Path, tool_runs: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    model = act_script(tmp_path, "recorded.json", "one")
    async with ratchet.Runtime(url) as rt:
        task = await rt.run(eval_flows.follow_the_model, model=model)
    # A database writer points the task at other code: its seal no longer holds.
    change_task_record(url, task.id, lambda record: record.update(workflow="tests.runtime.flows:double"))

    async with ratchet.Runtime(url) as rt:
        [refused] = (await rt.evaluate(model)).tasks

    assert refused.verdict is Verdict.DIFF
    [said] = refused.differences
    assert said.startswith(f"not run: task {task.id}: its code references do not match their seal")
    assert refused.candidate.status == "queued" and refused.candidate.tool_calls == []
    assert tool_runs.read_text() == "one\n"
