"""A lease held by a process of this host that no longer exists: taken over at once; a live one never.

Every holder is a real process of this host, alive or ended, looked up as a
worker looks it up (signal 0, ``/proc``).
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.engine import Worker, WorkerIdentity
from ratchet.engine.run.holders import holder_is_gone
from ratchet.errors import CannotResume
from ratchet.records import Lease, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS, entries

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


@pytest.fixture
def alive() -> Iterator[subprocess.Popen[bytes]]:
    """A process of this host that runs until the test ends."""
    process = subprocess.Popen(SLEEPER)
    yield process
    process.kill()
    process.wait()


def gone_pid() -> int:
    """The pid of a process of this host that ended and was reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def held_by(pid: int, **recorded: object) -> Lease:
    """A live lease held by process `pid` of this host, as its holder recorded it (but for `recorded`)."""
    holder = WorkerIdentity(name=f"holder-{pid}", pid=pid)
    lease = Lease(
        task_id="t1",
        owner=holder.name,
        token=1,
        expires_at=utcnow() + dt.timedelta(seconds=30),
        host=holder.host,
        pid=pid,
        pid_space=holder.pid_space,
        pid_started=holder.pid_started,
    )
    return lease.model_copy(update=recorded)


def test_a_holder_of_this_host_whose_process_ended_is_gone() -> None:
    assert holder_is_gone(held_by(gone_pid()))


def test_a_holder_of_this_host_whose_process_runs_is_not_gone(alive: subprocess.Popen[bytes]) -> None:
    lease = held_by(alive.pid)

    assert lease.pid_space and lease.pid_started > 0  # read from /proc, as a worker records them
    assert not holder_is_gone(lease)


def test_a_holder_whose_pid_now_names_a_later_process_is_gone(alive: subprocess.Popen[bytes]) -> None:
    """The holder ended and its pid was given to another process, which started later than it had."""
    started = held_by(alive.pid).pid_started

    assert holder_is_gone(held_by(alive.pid, pid_started=started - 1))


def test_a_killed_holder_its_parent_has_not_reaped_yet_is_gone() -> None:
    process = subprocess.Popen(SLEEPER)
    lease = held_by(process.pid)
    process.kill()
    try:
        deadline = time.monotonic() + 10  # a zombie still answers signal 0 until it is reaped
        while Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the killed process did not become a zombie"
            time.sleep(0.01)

        assert holder_is_gone(lease)
    finally:
        process.wait()


@pytest.mark.parametrize(
    "recorded",
    [{"pid_space": "another-boot/pid:[1]"}, {"pid_space": ""}, {"host": "elsewhere"}],
    ids=["another PID space", "an unknown PID space", "another host"],
)
def test_a_holder_this_process_cannot_look_up_is_never_judged(recorded: dict[str, str]) -> None:
    """A pid counted in another PID namespace, boot or machine may be in use there, however free here."""
    assert not holder_is_gone(held_by(gone_pid(), **recorded))


async def hold_like_a_killed_run(store: StateStore, rt: Runtime, ledger: str, lease: Lease) -> str:
    """A task as a killed `ratchet run` leaves it: made without a trigger, and `lease`'s holder holding it."""
    task_id = await rt.submit(f"{FLOWS}:first_call", {"ledger": ledger, "tool_name": "record"}, queue=False)
    held = await store.claim_lease(
        task_id,
        lease.owner,
        30.0,
        host=lease.host,
        pid=lease.pid,
        pid_space=lease.pid_space,
        pid_started=lease.pid_started,
    )
    assert held is not None
    return task_id


async def test_a_worker_takes_over_at_once_a_task_whose_holder_on_this_host_died(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task_id = await hold_like_a_killed_run(store, rt, ledger, held_by(gone_pid()))

    await Worker(store, poll_interval=0.05).run(until_idle=True)  # with the default 30 s lease

    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED
    dead, taken = await store.lease_history(task_id)
    assert taken.took_over and taken.token == dead.token + 1  # the dead holder is fenced out
    assert taken.granted_at is not None and taken.granted_at < dead.expires_at  # its lease not waited out
    [started] = [event for event in await store.list_events(task_id) if event.kind == "task_started"]
    assert f"taken over from {dead.owner} (pid {dead.pid} on {dead.host}), which no longer runs" in (
        started.message
    )
    assert started.data["taken_over_from"] == dead.owner


async def test_a_worker_leaves_a_task_whose_holder_on_this_host_runs(
    store: StateStore, rt: Runtime, ledger: str, alive: subprocess.Popen[bytes]
) -> None:
    task_id = await hold_like_a_killed_run(store, rt, ledger, held_by(alive.pid))
    [held] = await store.lease_history(task_id)

    await Worker(store, poll_interval=0.05).run(until_idle=True)

    assert (await store.get_task(task_id)).status is TaskStatus.QUEUED
    assert await store.lease_history(task_id) == [held]
    assert entries(ledger) == []


async def test_a_dead_holder_that_counted_its_pid_in_another_pid_space_is_waited_out(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    """A container that shares this host's name but not its PID namespace: its pid may be in use there."""
    elsewhere = held_by(gone_pid(), pid_space="another-boot/pid:[1]")
    task_id = await hold_like_a_killed_run(store, rt, ledger, elsewhere)
    [held] = await store.lease_history(task_id)

    await Worker(store, poll_interval=0.05).run(until_idle=True)
    with pytest.raises(CannotResume, match="wait for its lease to expire"):
        await rt.resume(task_id)

    assert await store.lease_history(task_id) == [held]
    assert entries(ledger) == []
