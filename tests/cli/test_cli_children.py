"""Child tasks from the command line: `ratchet resume` runs a whole tree; `show` and `tasks --tree`."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from ratchet.records import TaskStatus

from ..engine.child_flows import HERE, most_at_once
from ..helpers.cli import RunRatchet, ratchet_env
from .task_support import with_runtime, with_store

ROOT = str(Path(__file__).resolve().parents[2])


def test_resume_runs_the_whole_tree_in_its_own_process_and_show_lists_it(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    marks, ledger = str(tmp_path / "marks"), str(tmp_path / "ledger.jsonl")
    inputs: dict[str, JsonValue] = {"ledger": ledger, "marks": marks, "count": 4, "limit": 2, "seconds": 0.05}
    parent_id = with_runtime(url, lambda rt: rt.submit(f"{HERE}:fan_out", inputs))
    env = ratchet_env(PYTHONPATH=ROOT)

    done = run_ratchet("resume", parent_id, "--store", url, env=env)

    assert done.returncode == 0, done.stderr
    assert with_store(url, lambda store: store.get_task(parent_id)).status is TaskStatus.COMPLETED
    children = with_store(url, lambda store: store.list_children(parent_id))
    assert [c.status for c in children] == [TaskStatus.COMPLETED] * 4
    assert most_at_once(marks) <= 2

    shown = run_ratchet("show", parent_id, "--store", url, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Children (4):" in shown.stdout
    assert all(child.id in shown.stdout for child in children)
    as_json = json.loads(run_ratchet("show", parent_id, "--json", "--store", url, env=env).stdout)
    assert [c["task_id"] for c in as_json["children"]] == [c.id for c in children]
    assert {c["status"] for c in as_json["children"]} == {"completed"}

    child_view = json.loads(run_ratchet("show", children[0].id, "--json", "--store", url, env=env).stdout)
    assert child_view["task"]["parent_id"] == parent_id
    assert child_view["children"] == []
    shown_child = run_ratchet("show", children[0].id, "--store", url, env=env)
    [parent_line] = [line for line in shown_child.stdout.splitlines() if " parent " in line]
    assert parent_id in parent_line


def test_tasks_tree_puts_children_under_their_parent(
    run_ratchet: RunRatchet, url: str, tmp_path: Path
) -> None:
    ledger = str(tmp_path / "ledger.jsonl")
    first = with_runtime(url, lambda rt: rt.run(f"{HERE}:gathered", {"ledger": ledger}))
    other = with_runtime(url, lambda rt: rt.submit(f"{HERE}:leaf", {"ledger": ledger, "label": "alone"}))
    env = ratchet_env(PYTHONPATH=ROOT)

    listed = json.loads(run_ratchet("tasks", "--tree", "--json", "--store", url, env=env).stdout)

    assert [(row["task_id"], row["depth"]) for row in listed] == [
        (first.id, 0),
        (f"{first.id}.0", 1),
        (f"{first.id}.2", 1),
        (f"{first.id}.4", 1),
        (other, 0),
    ]
    text = run_ratchet("tasks", "--tree", "--store", url, env=env)
    assert text.returncode == 0, text.stderr
    assert f"└ {first.id}.0" in text.stdout
    assert text.stdout.index(f"{first.id}.4") < text.stdout.index(other)
