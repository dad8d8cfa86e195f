"""`ratchet export`: one JSON line a task (record, steps, journal, events), filtered as `ratchet tasks`,
streamed a page at a time; each line read back holds what the task had. On SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from ratchet.records import Event, Operation, TaskStatus, utcnow
from ratchet.store import StateStore

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error
from .task_support import as_task, flow, stored_task, with_runtime, with_store

EXTRA = ("steps", "journal", "events")


def _lines(done: Any) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _journal(url: str, task_id: str) -> list[Operation]:
    return with_store(url, lambda store: store.list_ops(task_id))


def _events(url: str, task_id: str) -> list[Event]:
    return with_store(url, lambda store: store.list_events(task_id))


def _record(line: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in line.items() if key not in EXTRA}


def test_each_line_reads_back_as_the_task_its_journal_and_events(run_ratchet: RunRatchet, url: str) -> None:
    ran = with_runtime(url, lambda runtime: runtime.run(flow("three_steps"), {}))
    failed = with_runtime(
        url, lambda runtime: runtime.run(flow("fails_with"), {"message": "the disk is full"})
    )

    done = run_ratchet("export", "--store", url)

    lines = _lines(done)
    assert done.stderr.strip() == "exported 2 tasks"
    assert [line["task_id"] for line in lines] == [ran.id, failed.id]  # oldest first
    for line in lines:
        task = as_task(_record(line))
        assert task == stored_task(url, task.id)
        ops = _journal(url, task.id)
        assert len(line["journal"]) == len(ops)
        assert [Operation.model_validate(entry) for entry in line["journal"]] == ops
        events = _events(url, task.id)
        assert [(entry["seq"], entry["kind"]) for entry in line["events"]] == [
            (e.seq, e.kind) for e in events
        ]
    assert lines[0]["status"] == "completed" and len(lines[0]["journal"]) == 3
    assert [step["step"] for step in lines[0]["steps"]] == [1, 2, 3]
    assert (lines[1]["status"], lines[1]["error"]) == ("failed", failed.error)


def test_the_filters_of_ratchet_tasks_choose_the_tasks(run_ratchet: RunRatchet, url: str) -> None:
    old = utcnow() - dt.timedelta(days=40)

    async def fill(store: StateStore) -> None:
        await store.create_task(make_task("old-done", status=TaskStatus.COMPLETED, created_at=old))
        await store.create_task(make_task("old-failed", status=TaskStatus.FAILED, created_at=old))
        await store.create_task(make_task("new-done", status=TaskStatus.COMPLETED))

    with_store(url, fill)

    def exported(*filters: str) -> list[str]:
        return [line["task_id"] for line in _lines(run_ratchet("export", *filters, "--store", url))]

    assert exported("--status", "completed", "--until", "30d") == ["old-done"]
    assert exported("--until", "30d") == ["old-done", "old-failed"]
    assert exported("--id-prefix", "new") == ["new-done"]
    assert exported("--label", "team=none") == []


def test_it_pages_through_more_tasks_than_a_page_once_each(run_ratchet: RunRatchet, url: str) -> None:
    start = utcnow() - dt.timedelta(hours=1)

    async def fill(store: StateStore) -> None:
        for n in range(230):
            await store.create_task(make_task(f"t{n:03}", created_at=start + dt.timedelta(seconds=n)))

    with_store(url, fill)

    lines = _lines(run_ratchet("export", "--store", url))

    assert [line["task_id"] for line in lines] == [f"t{n:03}" for n in range(230)]


def test_a_bad_filter_is_one_line(run_ratchet: RunRatchet, url: str) -> None:
    assert_one_line_error(run_ratchet("export", "--status", "done", "--store", url), "unknown status 'done'")


def test_a_store_never_made_exports_nothing(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("export", "--store", f"sqlite:///{tmp_path / 'none.db'}")

    assert (done.returncode, done.stdout, done.stderr.strip()) == (0, "", "exported 0 tasks")
    assert not (tmp_path / "none.db").exists()


def test_runtime_tasks_made_here_are_exported(run_ratchet: RunRatchet, url: str) -> None:
    task_id = with_runtime(url, lambda runtime: runtime.submit(flow("three_steps"), {}, labels={"k": "v"}))

    [line] = _lines(run_ratchet("export", "--label", "k=v", "--store", url))

    assert (line["task_id"], line["labels"], line["journal"]) == (task_id, {"k": "v"}, [])
