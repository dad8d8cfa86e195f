"""Bad input: one line on stderr, `error: ...`, exit code 2, no traceback, nothing touched."""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from pathlib import Path

import pytest

from ..helpers.cli import PopulatedStore, RunRatchet, assert_one_line_error

REPO_README = Path(__file__).resolve().parents[2] / "README.md"


def _tree(root: Path) -> list[Path]:
    return sorted(root.rglob("*"))


def test_store_in_a_missing_directory(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    for command in (["tasks"], ["show", "t-1"], ["events", "t-1"], ["migrate"]):
        done = run_ratchet(*command, "--store", f"sqlite:///{missing}/x.db")

        line = assert_one_line_error(done)
        assert "director" in line.lower(), line  # says the directory is the problem
        assert _tree(tmp_path) == []


@pytest.mark.parametrize("command", ["show", "events"])
def test_unknown_task(run_ratchet: RunRatchet, populated_store: PopulatedStore, command: str) -> None:
    done = run_ratchet(command, "nope", "--store", populated_store.url)

    assert_one_line_error(done, "'nope'", "ratchet tasks")


@pytest.mark.parametrize("command", ["show", "events"])
def test_unknown_task_in_a_missing_database_creates_nothing(
    run_ratchet: RunRatchet, tmp_path: Path, command: str
) -> None:
    done = run_ratchet(command, "nope")  # the default store, ./ratchet.db

    assert_one_line_error(done, "'nope'")
    assert _tree(tmp_path) == []


@pytest.mark.parametrize("command", [["tasks"], ["show", "t-1"], ["events", "t-1"], ["migrate"]])
def test_a_file_that_is_not_a_ratchet_database_is_left_alone(
    run_ratchet: RunRatchet, tmp_path: Path, command: list[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_bytes(REPO_README.read_bytes())
    before = hashlib.sha256(readme.read_bytes()).hexdigest()

    done = run_ratchet(*command, "--store", "sqlite:///README.md")

    line = assert_one_line_error(done, "README.md")
    assert "ratchet" in line.lower()
    assert hashlib.sha256(readme.read_bytes()).hexdigest() == before
    assert _tree(tmp_path) == [readme]  # no -wal, -shm or journal beside it


@pytest.mark.parametrize("url", ["foo", "nosuch://x", "sqlite://", "sqlite:///x.db?durability=sometimes"])
def test_bad_store_url(run_ratchet: RunRatchet, tmp_path: Path, url: str) -> None:
    done = run_ratchet("tasks", "--store", url)

    assert_one_line_error(done, repr(url))
    assert _tree(tmp_path) == []


def test_bad_status(run_ratchet: RunRatchet, populated_store: PopulatedStore) -> None:
    done = run_ratchet("tasks", "--status", "sleeping", "--store", populated_store.url)

    assert_one_line_error(done, "'sleeping'", "queued", "cancelled")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["tasks", "--frobnicate"], "--frobnicate"),
        (["show"], "TASK"),
        (["launch"], "launch"),
    ],
)
def test_usage_errors_are_one_line_too(run_ratchet: RunRatchet, args: list[str], expected: str) -> None:
    done = run_ratchet(*args)

    assert_one_line_error(done, expected, "--help")


def test_an_sqlite_database_of_something_else_is_left_alone(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as conn, conn:
        conn.execute("CREATE TABLE inventory (item TEXT)")
    before = hashlib.sha256(other.read_bytes()).hexdigest()

    for command in (["tasks"], ["migrate"]):
        done = run_ratchet(*command, "--store", "sqlite:///other.db")

        assert_one_line_error(done, "other.db", "not a Ratchet database")
        assert hashlib.sha256(other.read_bytes()).hexdigest() == before
        assert _tree(tmp_path) == [other]


def test_a_database_from_a_newer_ratchet_names_both_versions(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    assert run_ratchet("migrate", "--store", "sqlite:///new.db").returncode == 0
    with contextlib.closing(sqlite3.connect(tmp_path / "new.db")) as conn, conn:
        [(current,)] = conn.execute("SELECT MAX(version) FROM ratchet_schema_version")
        conn.execute(
            "INSERT INTO ratchet_schema_version (version, applied_at) VALUES (?, 0)",
            (current + 98,),
        )

    done = run_ratchet("tasks", "--store", "sqlite:///new.db")

    assert_one_line_error(done, str(current + 98), str(current), "upgrade Ratchet")
