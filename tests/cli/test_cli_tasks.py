"""`ratchet tasks`, `ratchet migrate` and `ratchet --version`, run as a real program."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers.cli import PopulatedStore, RunRatchet, ratchet_env
from .task_support import as_task


def test_tasks_lists_every_task_with_its_status(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet("tasks", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for task in populated_store.tasks.all:
        assert task.id in done.stdout
        assert task.name in done.stdout
    assert "waiting(approval)" in done.stdout
    assert "ops-agent" in done.stdout
    # oldest first
    positions = [done.stdout.index(task.id) for task in populated_store.tasks.all]
    assert positions == sorted(positions)


def test_tasks_status_filter_keeps_only_that_status(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet("tasks", "--status", "waiting", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    tasks = populated_store.tasks
    assert tasks.waiting.id in done.stdout
    for other in (tasks.queued, tasks.running, tasks.completed):
        assert other.id not in done.stdout


def test_tasks_status_filter_with_no_match_says_so(
    run_ratchet: RunRatchet, populated_store: PopulatedStore
) -> None:
    done = run_ratchet("tasks", "--status", "cancelled", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert "No cancelled tasks" in done.stdout


def test_tasks_json_is_the_task_records(run_ratchet: RunRatchet, populated_store: PopulatedStore) -> None:
    done = run_ratchet("tasks", "--json", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert [as_task(row) for row in listed] == populated_store.tasks.all


def test_tasks_json_with_status_filter(run_ratchet: RunRatchet, populated_store: PopulatedStore) -> None:
    done = run_ratchet("tasks", "--json", "--status", "completed", "--store", populated_store.url)

    assert done.returncode == 0, done.stderr
    assert [task["task_id"] for task in json.loads(done.stdout)] == [populated_store.tasks.completed.id]


def test_store_comes_from_the_environment(run_ratchet: RunRatchet, populated_store: PopulatedStore) -> None:
    done = run_ratchet("tasks", "--json", env=ratchet_env(RATCHET_STORE=populated_store.url))

    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)) == len(populated_store.tasks.all)


def test_tasks_on_a_missing_database_lists_nothing_and_creates_nothing(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    done = run_ratchet("tasks")  # the default store, ./ratchet.db in tmp_path

    assert done.returncode == 0, done.stderr
    assert "No tasks yet in sqlite:///./ratchet.db" in done.stdout
    assert list(tmp_path.iterdir()) == []

    as_json = run_ratchet("tasks", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == []
    assert list(tmp_path.iterdir()) == []


def test_migrate_creates_the_database_and_prints_its_version(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    done = run_ratchet("migrate", "--store", "sqlite:///fresh.db")

    assert done.returncode == 0, done.stderr
    assert (tmp_path / "fresh.db").is_file()
    assert "schema version" in done.stdout
    version = int(done.stdout.rsplit("schema version", 1)[1].split()[0])
    assert version >= 1

    listing = run_ratchet("tasks", "--store", "sqlite:///fresh.db")
    assert listing.returncode == 0, listing.stderr
    assert "No tasks yet" in listing.stdout

    again = run_ratchet("migrate", "--store", "sqlite:///fresh.db")
    assert again.returncode == 0, again.stderr
    assert again.stdout == done.stdout


def test_version(run_ratchet: RunRatchet) -> None:
    done = run_ratchet("--version")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("ratchet ")
    assert done.stdout.strip() != "ratchet "


def test_no_arguments_prints_help(run_ratchet: RunRatchet) -> None:
    done = run_ratchet()

    assert done.returncode == 0, done.stderr
    for command in ("tasks", "show", "events", "migrate"):
        assert command in done.stdout
