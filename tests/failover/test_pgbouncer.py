"""Workers behind a real PgBouncer in transaction pooling mode, given only its URL; one of them killed.

Real `ratchet worker` processes, as in test_failover.py, with the tools of
`tests.helpers.failover_tools` acting on a ledger file; their ``--store`` is the
PgBouncer URL (tests/helpers/pgbouncer.py), which shares a few server
connections among all their client connections transaction by transaction.
Group commit is on, so the strings of statements a group commits go through
the pooler too. Afterwards the ledger, the journal and the lease history must
show every task done, every effect once, no task held by two at once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from urllib.parse import quote

from ..helpers.failover_tools import connect
from ..helpers.pg import Cluster
from ..helpers.stores import sharing_commits
from .test_failover import (
    Crew,
    _environment,
    _histories,
    _ledger,
    _statuses,
    _submit,
    _wait_for,
    overlaps,
)

TASKS = 20
TOOL_SECONDS = 0.4  # each of a task's two calls: long enough to kill a worker in the middle of one
TIME_LIMIT = 45.0  # seconds for the tasks to complete after the kill; they take a fraction of it
POLLING = "behind a transaction pooler"  # the store's one line on falling back to polling


def _listening(postgres: Cluster, database: str) -> int:
    """How many connections to `database` LISTEN for new work, asked on a direct connection."""
    with postgres.admin() as admin:
        found = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND query = 'LISTEN ratchet_triggers'",
            (database,),
        ).fetchone()
    assert found is not None
    return int(found[0])


def _callers(ledger: Path) -> set[int]:
    """The processes that have started a tool call."""
    conn = connect(ledger)
    try:
        return {pid for (pid,) in conn.execute("SELECT DISTINCT pid FROM starts")}
    finally:
        conn.close()


def test_twenty_tasks_through_two_workers_behind_pgbouncer_one_killed_each_effect_once(
    pgbouncer_url: str, tmp_path: Path
) -> None:
    url = sharing_commits(pgbouncer_url)
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    task_ids = _submit(url, TASKS, tmp_path / "home")
    crew = Crew(url, tmp_path, _environment(ledger, TOOL_SECONDS))
    doomed, survivor = crew.start(), crew.start()
    doomed_pid = crew.running[doomed].pid
    try:
        _wait_for(lambda: doomed_pid in _callers(ledger), "the worker to be killed to be in a tool call")
        crew.kill(doomed)  # SIGKILL, mid-call: its tasks are left to expire and be taken over
        replacement = crew.start()
        _wait_for(lambda: _statuses(url)["completed"] == TASKS, "every task to complete", TIME_LIMIT)
    finally:
        crew.stop_all()

    statuses = _statuses(url)
    assert statuses == Counter({"completed": TASKS}), f"{statuses}\n{crew.logs()}"

    # Every effect exactly once by key: two steps per task, one effect each.
    effects, keys_by_task, starts = _ledger(ledger)
    assert set(keys_by_task) == set(task_ids)
    assert all(len(keys) == 2 for keys in keys_by_task.values()), "a task acted under other keys than its two"
    assert {key: count for key, count in effects.items() if count != 1} == {}, "effects done more than once"
    assert set(starts) == set(effects)

    # No two workers held one task at once; the killed worker's tasks were finished by the others.
    histories = _histories(url, task_ids)
    assert {
        task_id: pairs for task_id, h in histories.items() if (pairs := overlaps(h, crew.killed_pids))
    } == {}
    taken_over = [h for h in histories.values() if h[0].owner == doomed and len(h) > 1]
    assert taken_over, "none of the killed worker's tasks changed hands"
    assert {lease.owner for h in taken_over for lease in h[1:]} <= {survivor, replacement}

    # Given only the pooler's URL, each worker polls, and its store says why once.
    for name in (doomed, survivor, replacement):
        log = crew.log(name)
        assert "polling every 0.5 s" in log, log
        assert log.count(POLLING) == 1, log
        assert "?listen_url=" in log


def test_with_a_listen_url_a_worker_behind_pgbouncer_is_woken_by_notify(
    pgbouncer_url: str, postgres_url: str, postgres: Cluster, tmp_path: Path
) -> None:
    url = f"{pgbouncer_url}?listen_url={quote(postgres_url, safe='')}"
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    crew = Crew(url, tmp_path, _environment(ledger, 0.05))
    name = crew.start()
    database = postgres_url.rsplit("/", 1)[1]
    try:
        worker = crew.running[name]
        _wait_for(lambda: "woken when" in crew.log(name) or worker.poll() is not None, "the worker to start")
        assert "woken when work is queued" in crew.log(name), crew.log(name)

        # On the direct connection: nothing can LISTEN through PgBouncer.
        _wait_for(lambda: _listening(postgres, database) == 1, "the worker to LISTEN")
        [task_id] = _submit(pgbouncer_url, 1, tmp_path / "home")
        _wait_for(lambda: _statuses(pgbouncer_url)["completed"] == 1, "the task to complete")
    finally:
        crew.stop_all()
    assert POLLING not in crew.log(name)
    assert [lease.owner for lease in _histories(pgbouncer_url, [task_id])[task_id]] == [name]
