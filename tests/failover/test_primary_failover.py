"""The database itself fails over mid-run: workers on a multi-host URL ride through it.

A primary and its streaming replica (`tests.helpers.replication`), real
`ratchet worker` processes on a libpq multi-host URL
(``target_session_attrs=read-write``), agent tasks whose tools act on a
ledger file under their idempotency keys. Mid-run the primary is killed
(``pg_ctl stop -m immediate``) and, after a pause in which no server takes a
write, the replica is promoted. With synchronous replication every task
completes, each effect is in the ledger once, every journal is whole, and
each worker says once that it lost the store, once that it has it back, and
that the server now on a new timeline lost nothing it acknowledged. With
asynchronous replication the workers say what may have been lost.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import Counter
from pathlib import Path

from ratchet import open_store
from ratchet.records import Lease, OpKind

from ..helpers.failover_tools import connect
from ..helpers.replication import ReplicatedPair, replicated_pair
from .test_failover import Crew, _environment, _ledger, _statuses, _submit, _wait_for

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


def _histories(url: str, task_ids: list[str]) -> dict[str, list[Lease]]:
    async def read() -> dict[str, list[Lease]]:
        store = await open_store(url, create=False)
        try:
            return {task_id: await store.lease_history(task_id) for task_id in task_ids}
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


def test_an_asynchronous_failover_is_reported_not_silent(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    with replicated_pair(synchronous=False) as pair:
        url = pair.url(pair.create_database())
        _submit(url, TASKS, tmp_path / "home")
        crew = Crew(url, tmp_path, _environment(ledger, tool_seconds=0.3))
        names = [crew.start("--concurrency", "2") for _ in range(2)]
        try:
            _fail_over(pair, url, ledger, crew)
            _wait_for(lambda: _statuses(url)["completed"] == TASKS, "every task to complete", timeout=60)
        finally:
            crew.stop_all()
    for name in names:
        log = crew.log(name)
        assert "timeline" in log and "asynchronous" in log and "may have been lost" in log, log
