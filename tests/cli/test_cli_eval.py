"""`ratchet eval` over 20 tasks recorded for real, on a real SQLite store, with the scripted model.

The tasks are recorded once for the module (tests/helpers/eval_recordings.py
says how: 15 with the new model's own script, 5 with one tool call other
than the new model makes); each test evaluates its own copy of the store, so
a test that wrote to it (none may) could not hide it from another.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_env, ratchet_runner
from ..helpers.eval_recordings import NEW_MODEL, appended, fingerprint, record, write_files

SAME, CHANGED = 15, 5


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the tools, the scripts and a store of 20 recorded tasks (40 lines appended)."""
    directory = tmp_path_factory.mktemp("recorded")
    write_files(directory)
    env = ratchet_env(XDG_STATE_HOME=str(directory / "xdg-state"))
    record(directory, f"sqlite:///{directory / 'ratchet.db'}", same=SAME, changed=CHANGED, env=env)
    assert len(appended(directory)) == 2 * (SAME + CHANGED)
    return directory


@pytest.fixture
def project(recorded: Path, tmp_path: Path) -> Path:
    """This test's copy of the recorded project: its tools, scripts, appended lines and store."""
    copy = tmp_path / "project"
    shutil.copytree(recorded, copy, ignore=shutil.ignore_patterns("xdg-state", "__pycache__"))
    return copy


@pytest.fixture
def run_here(project: Path) -> RunRatchet:
    return ratchet_runner(project)


@pytest.fixture
def url(project: Path) -> str:
    return f"sqlite:///{project / 'ratchet.db'}"


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


def test_eval_finds_the_five_changed_tasks_and_runs_no_tool(
    run_here: RunRatchet, project: Path, url: str
) -> None:
    lines, stored = appended(project), fingerprint(project)

    shown = report(run_here("eval", "--model", NEW_MODEL, "--json", "--store", url))

    assert shown["model"] == NEW_MODEL
    assert shown["scorer"] == "exact"
    totals = shown["totals"]
    assert (totals["tasks"], totals["matches"], totals["diffs"]) == (20, 15, 5)
    diffs = [task for task in shown["tasks"] if task["verdict"] == "diff"]
    assert [task["recorded"]["model"] for task in diffs] == ["scripted:recorded-changed.json"] * 5
    for task in diffs:
        assert task["differences"] == ["tool call not in the recording: append(line='two')"]
        assert task["score"] == 0
        new = task["candidate"]
        assert new["model"] == NEW_MODEL
        assert new["stopped"] == "tool call not in the recording: append(line='two')"
        assert new["status"] == "stopped"
        assert [call["arguments"] for call in new["tool_calls"]] == [{"line": "one"}, {"line": "two"}]
        assert new["tool_calls"][0]["output"] == "appended one"  # served from the recording
        assert new["tool_calls"][1]["output"] is None  # not run, not served
        assert new["result"] is None
        assert 0 < new["tokens"] < task["recorded"]["tokens"]  # it stopped before its last model call
    for task in shown["tasks"]:
        if task["verdict"] == "match":
            assert task["recorded"]["model"] == "scripted:recorded-same.json"
            assert task["differences"] == []
            assert task["candidate"]["result"] == task["recorded"]["result"] == "appended two"
            assert task["candidate"]["tokens"] == task["recorded"]["tokens"] > 0
    assert totals["candidate_tokens"] < totals["recorded_tokens"]
    assert totals["recorded_latency"] > 0 and totals["candidate_latency"] > 0
    assert appended(project) == lines  # no tool ran: not one line more
    assert fingerprint(project) == stored  # the store's bytes are as they were


def test_the_table_says_each_verdict_and_the_totals(run_here: RunRatchet, project: Path, url: str) -> None:
    stored = fingerprint(project)

    done = run_here("eval", "--model", NEW_MODEL, "--store", url)

    assert done.returncode == 0, done.stderr
    assert f"eval of {NEW_MODEL} (scorer: exact)" in done.stdout
    assert done.stdout.count(" match ") == 15
    assert done.stdout.count(" diff ") == 5
    assert done.stdout.count("tool call not in the recording: append(line='two')") == 5
    assert "15 match, 5 differ, of 20 task(s). New against recorded: tokens " in done.stdout
    assert fingerprint(project) == stored


def test_where_takes_the_filters_of_tasks(run_here: RunRatchet, url: str) -> None:
    shown = report(
        run_here("eval", "--model", NEW_MODEL, "--where", "label=kind=changed", "--json", "--store", url)
    )

    assert (shown["totals"]["matches"], shown["totals"]["diffs"]) == (0, 5)
    both = run_here(
        "eval", "-m", NEW_MODEL, "-w", "status=completed", "-w", "search=round 3", "--json", "--store", url
    )
    [only] = report(both)["tasks"]
    assert only["name"].endswith("round 3") and only["verdict"] == "match"


def test_fail_on_diff_exits_1_once_the_eval_ran(run_here: RunRatchet, url: str) -> None:
    differs = run_here("eval", "--model", NEW_MODEL, "--fail-on-diff", "--json", "--store", url)
    same = run_here(
        "eval", "--model", NEW_MODEL, "--where", "label=kind=same", "--fail-on-diff", "--json", "--store", url
    )

    assert differs.returncode == 1, differs.stderr
    assert json.loads(differs.stdout)["totals"]["diffs"] == 5
    assert same.returncode == 0, same.stderr


SCORERS = """
from ratchet.runtime.evals import EvalRun


def same_answer(recorded, candidate):
    assert isinstance(recorded, EvalRun) and isinstance(candidate, EvalRun)
    assert recorded.model != candidate.model and recorded.task_id == candidate.task_id
    if recorded.result == candidate.result:
        return {"match": True, "score": 1.0}
    return {"match": False, "score": 0.25, "differences": [f"answer {candidate.result!r}"]}


def half(recorded, candidate):
    return 0.5
"""


def test_a_scorer_of_ones_own_judges_each_run(run_here: RunRatchet, project: Path, url: str) -> None:
    (project / "scorers.py").write_text(SCORERS)
    lines = appended(project)

    own = report(
        run_here("eval", "--model", NEW_MODEL, "--scorer", "scorers.py:same_answer", "--json", "--store", url)
    )
    half = report(
        run_here(
            "eval",
            "-m",
            NEW_MODEL,
            "--scorer",
            "scorers.py:half",
            "-w",
            "label=kind=same",
            "--json",
            "--store",
            url,
        )
    )

    assert own["scorer"] == "scorers.py:same_answer"
    assert (own["totals"]["matches"], own["totals"]["diffs"]) == (15, 5)
    # A run stopped at a call the recording lacks is a diff before any scorer sees it.
    assert {tuple(t["differences"]) for t in own["tasks"] if t["verdict"] == "diff"} == {
        ("tool call not in the recording: append(line='two')",)
    }
    assert {(t["verdict"], t["score"]) for t in half["tasks"]} == {("diff", 0.5)}
    assert len(half["tasks"]) == 15
    assert appended(project) == lines


def test_json_diff_compares_the_final_answers(run_here: RunRatchet, url: str) -> None:
    shown = report(
        run_here(
            "eval",
            "-m",
            NEW_MODEL,
            "--scorer",
            "json-diff",
            "-w",
            "label=kind=same",
            "--json",
            "--store",
            url,
        )
    )

    assert shown["scorer"] == "json-diff"
    assert (shown["totals"]["matches"], shown["totals"]["diffs"]) == (15, 0)


def test_the_html_report_is_one_file(run_here: RunRatchet, project: Path, url: str) -> None:
    done = run_here("eval", "--model", NEW_MODEL, "--html", "report.html", "--store", url)

    assert done.returncode == 0, done.stderr
    assert "The report is in report.html." in done.stdout
    page = (project / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "15 match" in page and "5 differ" in page
    # Each of the 5 in the table, in its task's differences, and as how its new run ended.
    assert page.count("tool call not in the recording: append(line=&#x27;two&#x27;)") == 15
    assert page.count("stopped: tool call not in the recording") == 5
    for external in ("<script", "<link", "src=", "url("):
        assert external not in page


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--model", "nowhere:model"), "unknown"),
        (("--model", "scripted:missing.json"), "no script file at"),
        (("--model", NEW_MODEL, "--scorer", "scorers.py:none"), "--scorer scorers.py:none"),
        (("--model", NEW_MODEL, "--scorer", "ranking"), "--scorer 'ranking': use exact, json-diff"),
        (("--model", NEW_MODEL, "--where", "status=failed"), "no task matches the filter"),
        (("--model", NEW_MODEL, "--where", "colour=red"), "no field 'colour'"),
        (("--model", NEW_MODEL, "--where", "status"), "write FIELD=VALUE"),
        (("--model", NEW_MODEL, "--where", "since=tomorrow"), "--where since"),
        (("--model", NEW_MODEL, "--html", "no/such/dir/report.html"), "there is no directory no/such/dir"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    run_here: RunRatchet, project: Path, url: str, args: tuple[str, ...], expected: str
) -> None:
    (project / "scorers.py").write_text(SCORERS)
    lines, stored = appended(project), fingerprint(project)

    done = run_here("eval", *args, "--store", url)

    assert expected in assert_one_line_error(done)
    assert done.stdout == ""
    assert appended(project) == lines
    assert fingerprint(project) == stored
