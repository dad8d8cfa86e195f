"""`ratchet demo team`, run as a real program: a team's worker SIGKILLed mid-save, a resume, the proof."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from ratchet.records import TaskStatus
from ratchet.store import StateStore

from .task_support import with_store
from .test_cli_demo import run_demo


def test_demo_team_exits_0_and_its_ledger_proves_each_module_saved_once(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "team", "--store", f"sqlite:///{tmp_path}/demo.db")

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "Killed worker 1" in done.stdout
    assert "no model call was paid for twice" in done.stdout
    with sqlite3.connect(tmp_path / "ledger.db") as conn:
        effects = conn.execute("SELECT idempotency_key, detail FROM effects").fetchall()
        runs = Counter(key for (key,) in conn.execute("SELECT idempotency_key FROM invocations"))
    # Each module once, and cli once more for the reviewer's fix: every key took effect once.
    modules = sorted(detail.split('"module": "')[1].split('"')[0] for _, detail in effects)
    assert modules == ["cli", "cli", "evaluate", "parser", "tokens"]
    # The save in flight at the kill ran again under its key; at least one finished before it ran once.
    assert sorted(runs.values())[0] == 1 and max(runs.values()) == 2
    assert set(runs) == {key for key, _ in effects}

    async def look(store: StateStore) -> tuple[set[TaskStatus], list[int]]:
        tasks = await store.list_tasks()
        ops = [op for task in tasks for op in await store.list_ops(task.id) if op.kind == "model"]
        return {task.status for task in tasks}, [op.attempt for op in ops]

    statuses, model_attempts = with_store(f"sqlite:///{tmp_path}/demo.db", look)
    assert statuses == {TaskStatus.COMPLETED}
    assert model_attempts == [1] * 7  # architect, 4 coders, reviewer, the fix: none made twice
    assert (tmp_path / "package" / "cli.py").read_text().startswith("# Review fix:")


def test_demo_model_options_belong_to_the_team_story(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "--coder-model", "openai:gpt-4o-mini")

    assert done.returncode == 2
    assert "ratchet demo team" in done.stderr + done.stdout


def test_the_team_demo_shares_a_store_with_the_deploy_demo_and_itself(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path}/demo.db"
    deploy = run_demo(tmp_path, "--store", store)
    assert deploy.returncode == 0, deploy.stdout + deploy.stderr

    # The ledger beside the store holds the deploy's tools, then the first team's saves, when each
    # team reads it: each counts the rows of its own task tree only.
    for _ in range(2):
        team = run_demo(tmp_path, "team", "--store", store)
        assert team.returncode == 0, team.stdout + team.stderr
        assert "Traceback" not in team.stdout + team.stderr

    async def statuses(store: StateStore) -> list[TaskStatus]:
        return [task.status for task in await store.list_tasks()]

    # The deploy, then each team's task and its five coders.
    assert with_store(store, statuses) == [TaskStatus.COMPLETED] * 13
