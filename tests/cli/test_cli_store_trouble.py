"""The store in trouble, as `ratchet` shows it: full, read-only, unreachable, and never a password.

A store that fails while `run` or `resume` runs a task stops the task
resumable and exits 5 with one line saying the store is the problem and how
to continue; once the store is fixed, `ratchet resume` completes the task
with each side effect once. A database that cannot be written still answers
the commands that only read it. A store URL is never printed with its
password, whatever form the password takes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import JsonValue

from ratchet.records import TaskStatus

from ..helpers import disk
from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.disk import SmallDisk
from ..helpers.pg import Cluster
from .run_support import acts, script
from .store_flows import set_read_only
from .task_support import with_runtime, with_store

EXIT_STORE_FAILED = 5
STORE_FLOWS = Path(__file__).with_name("store_flows.py")

# The tools of the `run` test: one effect per idempotency key in a ledger, and, the first time
# (while fill-once exists), a disk that fills up right after; the result is long, so the journal
# write that keeps it needs room the disk no longer has.
TOOLS = """
import json
from pathlib import Path

import ratchet
from disk_filler import fill_disk

HERE = Path(__file__).parent


@ratchet.tool
def record(entry: str, ctx: ratchet.ToolContext) -> str:
    \"\"\"Write an entry in the ledger.\"\"\"
    ledger = HERE / "ledger.jsonl"
    done = [json.loads(line)["key"] for line in ledger.read_text().splitlines()] if ledger.exists() else []
    if ctx.idempotency_key not in done:
        with ledger.open("a") as out:
            out.write(json.dumps({"key": ctx.idempotency_key, "entry": entry}) + "\\n")
    if (HERE / "fill-once").exists():
        (HERE / "fill-once").unlink()
        fill_disk(HERE / "disk")
    return f"recorded {entry} " + "." * 100_000
"""


def ledger(path: Path) -> list[str]:
    """What the tools recorded, in order; one line per idempotency key."""
    lines = path.read_text().splitlines() if path.exists() else []
    entries = [json.loads(line) for line in lines]
    assert len({entry["key"] for entry in entries}) == len(entries)
    return [entry.get("entry") or entry["parcel"] for entry in entries]


def store_failed(done: subprocess.CompletedProcess[str], *expected: str) -> str:
    """Check the shape of exit 5; return the id of the task the line names."""
    assert done.returncode == EXIT_STORE_FAILED, (done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: the store failed while task ")
    assert "has not failed and stays resumable" in line
    for text in expected:
        assert text in line
    task_id = line.split()[6]
    assert "resume --store " in line and line.rstrip().endswith(f"{task_id}` continues it")
    return task_id


def assert_resumable(url: str, task_id: str) -> None:
    task = with_store(url, lambda store: store.get_task(task_id))
    assert (task.status, task.error) == (TaskStatus.RUNNING, None)
    events = with_store(url, lambda store: store.list_events(task_id))
    assert not {"task_failed", "step_failed"} & {event.kind for event in events}


# --------------------------------------------------------------------------- a full disk


def test_a_full_disk_mid_run_exits_5_and_resume_completes_the_task_once_freed(
    run_ratchet: RunRatchet, small_disk: SmallDisk, tmp_path: Path
) -> None:
    shutil.copy(disk.__file__, tmp_path / "disk_filler.py")
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "fill-once").touch()
    url = f"sqlite:///{small_disk.directory / 'r.db'}"
    model = script(tmp_path, act=[*acts("a"), *acts("b")])

    done = run_ratchet("run", "keep the ledger", "--model", model, "--tools", "tools.py", "--store", url)

    try:
        task_id = store_failed(done, "is full", str(small_disk.directory / "r.db"))
        assert_resumable(url, task_id)
    finally:
        small_disk.free()
    assert ledger(tmp_path / "ledger.jsonl") == ["a"]

    again = run_ratchet("resume", task_id, "--json", "--store", url)

    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["status"] == "completed"
    assert ledger(tmp_path / "ledger.jsonl") == ["a", "b"]


# --------------------------------------------------------------------------- a read-only database


def test_a_read_only_postgresql_stops_the_task_and_resume_completes_it_once_writable(
    run_ratchet: RunRatchet, postgres: Cluster, postgres_url: str, tmp_path: Path
) -> None:
    (tmp_path / "read-only-once").touch()
    inputs: dict[str, JsonValue] = {
        "ledger": str(tmp_path / "ledger.jsonl"),
        "admin_url": postgres.url(),
        "marker": str(tmp_path / "read-only-once"),
    }
    task_id = with_runtime(postgres_url, lambda rt: rt.submit(f"{STORE_FLOWS}:deliveries", inputs))

    try:
        done = run_ratchet("resume", task_id, "--store", postgres_url)
    finally:
        set_read_only(postgres.url(), False)

    assert store_failed(done, "is read-only") == task_id
    assert_resumable(postgres_url, task_id)
    again = run_ratchet("resume", task_id, "--json", "--store", postgres_url)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[-1])["result"] == ["delivered first", "delivered second"]
    assert ledger(tmp_path / "ledger.jsonl") == ["first", "second"]


@pytest.fixture
def read_only_store(small_disk: SmallDisk, tmp_path: Path) -> tuple[str, str]:
    """A store on the small disk holding one queued task, then made read-only: its URL and the task's id."""
    url = f"sqlite:///{small_disk.directory / 'r.db'}"
    inputs = {"ledger": str(tmp_path / "ledger.jsonl"), "admin_url": url, "marker": str(tmp_path / "marker")}
    task_id = with_runtime(url, lambda rt: rt.submit(f"{STORE_FLOWS}:deliveries", inputs))
    small_disk.make_read_only()
    return url, task_id


@pytest.mark.parametrize("command", ["tasks", "show", "events"])
def test_a_read_only_database_answers_the_commands_that_read(
    run_ratchet: RunRatchet, read_only_store: tuple[str, str], command: str
) -> None:
    url, task_id = read_only_store
    args = [command] if command == "tasks" else [command, task_id]

    done = run_ratchet(*args, "--store", url)

    assert done.returncode == 0, done.stderr
    assert (task_id if command != "events" else "Created deliveries") in done.stdout


def test_a_read_only_database_refuses_a_write_saying_it_is_read_only(
    run_ratchet: RunRatchet, read_only_store: tuple[str, str], small_disk: SmallDisk
) -> None:
    url, task_id = read_only_store
    path = small_disk.directory / "r.db"

    refused = run_ratchet("cancel", task_id, "--store", url)
    resumed = run_ratchet("resume", task_id, "--store", url)

    assert "not a Ratchet database" not in refused.stderr + resumed.stderr
    assert_one_line_error(refused, f"the database at {path} is read-only (")
    assert store_failed(resumed, f"the database at {path} is read-only (") == task_id


# --------------------------------------------------------------------------- passwords


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:secret@127.0.0.1:1/x",
        "postgresql://u@127.0.0.1:1/x?password=secret",
        "postgresql://127.0.0.1:1/x?sslmode=disable&password=secret&pool_size=0",
        "host=127.0.0.1 port=1 password=secret",
        "postgresql://u:secret@[bad",
    ],
)
def test_a_password_in_a_store_url_is_never_printed(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet("tasks", "--store", url)

    line = assert_one_line_error(done)
    assert "secret" not in line


def test_a_password_given_as_an_option_is_shown_hidden(run_ratchet: RunRatchet, postgres_url: str) -> None:
    # The test cluster trusts local users: any password will do.
    with_password = f"{postgres_url}?password=secret"

    done = run_ratchet("tasks", "--store", with_password)

    assert done.returncode == 0, done.stderr
    assert "secret" not in done.stdout + done.stderr
    assert "?password=***" in done.stdout
