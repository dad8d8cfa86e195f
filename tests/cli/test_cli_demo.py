"""`ratchet demo`, run as a real program: a deploy, a SIGKILL mid-apply, a resume, each effect once."""

from __future__ import annotations

import sqlite3
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from ratchet.records import Event, Operation, OpStatus, Task, TaskStatus
from ratchet.store import StateStore

from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env
from .task_support import with_store

TOOLS = ["check_status", "build_image", "push_image", "apply_manifest", "verify_rollout"]
DEMO_TIMEOUT = 60

Demo = tuple[Path, subprocess.CompletedProcess[str]]


def run_demo(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ratchet_command("demo", *args),
        check=False,
        cwd=cwd,
        env=ratchet_env(**env),
        capture_output=True,
        text=True,
        timeout=DEMO_TIMEOUT,
    )


def ledger_rows(path: Path, query: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """One demo run into a store the tests can open (the ledger goes beside it)."""
    where = tmp_path_factory.mktemp("demo")
    done = run_demo(where, "--store", f"sqlite:///{where}/demo.db")
    return where, done


def test_the_demo_tells_the_story_and_exits_0(demo: Demo) -> None:
    _, done = demo

    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "killed with SIGKILL in the middle of apply_manifest" in done.stdout
    assert "every effect exactly once" in done.stdout
    assert "replayed 15 operations" in done.stdout


def test_each_effect_is_in_the_ledger_exactly_once(demo: Demo) -> None:
    where, done = demo
    assert done.returncode == 0, done.stdout
    ledger = where / "ledger.db"

    effects = ledger_rows(ledger, "SELECT tool, idempotency_key FROM effects")
    invocations = ledger_rows(ledger, "SELECT tool, idempotency_key, pid FROM invocations")

    assert Counter(tool for tool, _ in effects) == Counter(TOOLS)
    assert len({key for _, key in effects}) == len(TOOLS)
    runs = Counter(tool for tool, _, _ in invocations)
    assert runs == Counter({**dict.fromkeys(TOOLS, 1), "apply_manifest": 2})
    applies = [(key, pid) for tool, key, pid in invocations if tool == "apply_manifest"]
    assert len({key for key, _ in applies}) == 1  # both runs carried the same idempotency key
    assert len({pid for _, pid in applies}) == 2  # ... from two different worker processes


def test_the_store_shows_the_crash_and_the_resume(demo: Demo) -> None:
    where, done = demo
    assert done.returncode == 0, done.stdout
    url = f"sqlite:///{where}/demo.db"

    async def look(store: StateStore) -> tuple[Task, list[Operation], list[Event]]:
        [task] = await store.list_tasks()
        return task, await store.list_ops(task.id), await store.list_events(task.id)

    task, ops, events = with_store(url, look)

    assert task.status is TaskStatus.COMPLETED
    assert all(op.status is OpStatus.SUCCEEDED for op in ops)
    [apply] = [op for op in ops if op.name == "apply_manifest"]
    assert apply.attempt == 2  # caught in flight by the kill, run again on resume
    kinds = [event.kind for event in events]
    assert kinds.count("task_started") == 1 and kinds.count("task_resumed") == 1
    [rerun] = [event for event in events if event.kind == "in_doubt_rerun"]
    assert rerun.data["seq"] == apply.seq
    tool_events_after_resume = [
        event.data.get("name")
        for event in events[kinds.index("task_resumed") :]
        if event.kind in ("tool_call", "tool_result")
    ]
    assert "push_image" not in tool_events_after_resume  # replayed, not run again


def test_by_default_the_demo_works_in_a_temporary_directory_and_removes_it(tmp_path: Path) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()

    done = run_demo(tmp_path, TMPDIR=str(temp))

    assert done.returncode == 0, done.stdout + done.stderr
    assert "every effect exactly once" in done.stdout
    assert f"Removed {temp}" in done.stdout
    assert list(temp.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["temp"]  # nothing left in the cwd


def test_a_store_other_processes_cannot_reach_is_refused(tmp_path: Path) -> None:
    done = run_demo(tmp_path, "--store", "memory://")

    assert_one_line_error(done, "ratchet demo needs a SQLite store")


def test_another_applications_database_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    app = tmp_path / "some-other-app.db"
    with sqlite3.connect(app) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO customers (name) VALUES ('ann')")
    conn.close()
    before = app.read_bytes()

    done = run_demo(tmp_path, "--store", f"sqlite:///{app}")

    assert_one_line_error(done, "some-other-app.db", "not a Ratchet database")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["some-other-app.db"]  # no ledger, no script
    assert app.read_bytes() == before
