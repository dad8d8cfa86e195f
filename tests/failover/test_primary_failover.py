"""The database itself fails over mid-run: workers on a multi-host URL ride through it.

A primary and its streaming replica (`tests.helpers.replication`), real
`ratchet worker` processes on a libpq multi-host URL
(``target_session_attrs=read-write``), agent tasks whose tools act on a
ledger file under their idempotency keys. Mid-run the primary is killed
(``pg_ctl stop -m immediate``) and, after a pause in which no server takes a
write, the replica is promoted. With synchronous replication every task
completes, each effect is in the ledger once, every journal is whole, and
the workers say once that they lost the store, once that they have it back,
and that the server now on a new timeline lost nothing it acknowledged. With
asynchronous replication the replica is made to stop receiving WAL before the
work starts, so its promotion loses commits for certain: the worker says what
may have been lost, names the tasks whose leases the database forgot, and the
tasks run again from what their journals kept, keyed calls under their keys.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from pathlib import Path

import psycopg

from ratchet import open_store
from ratchet.records import OpKind

from ..helpers.failover_tools import connect
from ..helpers.replication import ReplicatedPair, replicated_pair
from .test_failover import Crew, _environment, _histories, _ledger, _statuses, _submit, _wait_for

TASKS = 24
WORKERS = 3
OUTAGE = 1.5  # seconds between the primary's death and the promotion: no server takes a write


def _journals(url: str, task_ids: list[str]) -> dict[str, list[tuple[int, str, str]]]:
    """Each task's tool calls: (seq, name, status)."""

    async def read() -> dict[str, list[tuple[int, str, str]]]:
        store = await open_store(url, create=False)
        try:
            return {
                task_id: [
                    (op.seq, op.name, str(op.status))
                    for op in await store.list_ops(task_id)
                    if op.kind is OpKind.TOOL
                ]
                for task_id in task_ids
            }
        finally:
            await store.close()

    return asyncio.run(read())


def _fail_over(pair: ReplicatedPair, url: str, ledger: Path, crew: Crew) -> Counter[str]:
    """Kill the primary once the run is under way, promote the replica after `OUTAGE`; the statuses
    the primary last showed."""
    _wait_for(lambda: sum(_ledger(ledger)[0].values()) >= TASKS // 2, "the run to get under way")
    before = _statuses(url)
    pair.stop_primary()
    time.sleep(OUTAGE)
    pair.promote()
    return before


def test_workers_ride_through_a_primary_failover_with_synchronous_replication(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    with replicated_pair(synchronous=True) as pair:
        url = pair.url(pair.create_database())
        task_ids = _submit(url, TASKS, tmp_path / "home")
        crew = Crew(url, tmp_path, _environment(ledger, tool_seconds=0.3))
        names = [crew.start("--concurrency", "2") for _ in range(WORKERS)]
        try:
            before = _fail_over(pair, url, ledger, crew)
            _wait_for(lambda: _statuses(url)["completed"] == TASKS, "every task to complete", timeout=60)
        finally:
            crew.stop_all()
        assert before["completed"] < TASKS, "the run ended before the failover: it proves nothing"

        statuses = _statuses(url)
        assert statuses == Counter({"completed": TASKS}), f"{statuses}\n{crew.logs()}"
        journals = _journals(url, task_ids)
        histories = _histories(url, task_ids)

    # Each effect once, under the two keys of its task.
    effects, keys_by_task, starts = _ledger(ledger)
    assert set(keys_by_task) == set(task_ids)
    assert all(len(keys) == 2 for keys in keys_by_task.values())
    assert {key: count for key, count in effects.items() if count != 1} == {}
    assert set(starts) == set(effects)
    # Journals intact: two tool calls a task, each succeeded once, in order.
    for task_id, calls in journals.items():
        assert [(name, status) for _, name, status in calls] == [("record_step", "succeeded")] * 2, task_id
    # No two workers held a task at once: a claim over a live lease is its own holder's, taking
    # back after the failover the task its stopped run held.
    for task_id, history in histories.items():
        for before_claim, after_claim in itertools.pairwise(history):
            assert after_claim.granted_at is not None
            if after_claim.granted_at < before_claim.expires_at:
                assert after_claim.owner == before_claim.owner, (task_id, history)

    logs = {name: crew.log(name) for name in names}
    for name, log in logs.items():
        assert crew.running[name].returncode == 0, log
        # An outage is said once when it begins and once when it ends, however many attempts it took.
        assert log.count(f"worker {name}: the store failed") <= 1, log
        assert log.count(f"worker {name}: the store answers again") == log.count(f"{name}: the store failed")
        assert log.count("the change feed lost") <= 1, log
        assert "error connecting in" not in log, log  # the pool's own line an attempt, kept quiet
        assert log.count("the database failed over") <= 1, log
        assert "may have been lost" not in log and "no longer knows the lease" not in log, log
    told = "\n".join(logs.values())
    assert "worker w" in told and ": the store failed" in told, told
    assert "the database failed over" in told and "on WAL timeline 2, where it was on timeline 1" in told
    assert "ran synchronous replication" in told, told


def _stop_receiving(pair: ReplicatedPair) -> None:
    """The replica stops receiving the primary's WAL (its walreceiver ends; it stays a standby).

    From here on, whatever the primary commits (and acknowledges: replication is asynchronous)
    never reaches the replica: promoted, it has lost those commits, deterministically.
    """
    with psycopg.connect(pair.replica.url(), autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET primary_conninfo = ''")
        conn.execute("SELECT pg_reload_conf()")
        while conn.execute("SELECT count(*) FROM pg_stat_wal_receiver").fetchone() != (0,):
            time.sleep(0.02)


def test_commits_an_asynchronous_failover_lost_are_said_and_keyed_calls_run_again_under_their_keys(
    tmp_path: Path,
) -> None:
    """The replica stops receiving before the work starts: everything the workers commit is lost
    when it is promoted. The tasks run again from their journals' start on the new primary, their
    keyed calls under the same keys (each effect still once); the worker says the failover lost
    commits, and names the tasks whose leases the database no longer knows."""
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    tasks = 6
    with replicated_pair(synchronous=False) as pair:
        url = pair.url(pair.create_database())
        task_ids = _submit(url, tasks, tmp_path / "home")
        pair.wait_replayed()  # the tasks, queued, are on the replica
        _stop_receiving(pair)
        crew = Crew(url, tmp_path, _environment(ledger, tool_seconds=0.5))
        name = crew.start("--concurrency", str(tasks))
        try:
            _wait_for(lambda: len(_ledger(ledger)[0]) >= tasks, "every task's first call to be done")
            lost_effects = set(_ledger(ledger)[0])
            pair.stop_primary()
            pair.promote()
            _wait_for(lambda: _statuses(url)["completed"] == tasks, "every task to complete", timeout=60)
        finally:
            crew.stop_all()
        journals = _journals(url, task_ids)

    effects, keys_by_task, starts = _ledger(ledger)
    assert {key: count for key, count in effects.items() if count != 1} == {}  # each effect once, by key
    assert all(len(keys) == 2 for keys in keys_by_task.values())
    # The calls whose journal rows the failover lost ran again, under the same keys.
    assert all(starts[key] >= 2 for key in lost_effects), (starts, lost_effects)
    for task_id, calls in journals.items():
        assert [(name, status) for _, name, status in calls] == [("record_step", "succeeded")] * 2, task_id
    log = crew.log(name)
    assert "the database failed over" in log and "may have been lost" in log, log
    assert "the database no longer knows the lease this worker held" in log, log
    assert "left to another worker" not in log, log  # there is none: the lease was lost, not taken
