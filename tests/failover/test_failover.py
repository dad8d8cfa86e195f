"""Many workers on one PostgreSQL, killed and paused: every task done, every effect once, no shared lease.

Real `ratchet worker` processes run agent tasks (scripted model, the tools of
`tests.helpers.failover_tools` acting on a ledger file). One of them is killed with SIGKILL every few seconds
and another started in its place. Afterwards the ledger, the journal and the
lease history the store keeps must show that nothing was lost, nothing was
done twice, and no two workers ever held one task at the same time.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet import Operation, Runtime, open_store
from ratchet.cli.agent_spec import build_agent
from ratchet.records import Lease, OpKind

from ..helpers.failover_tools import LEDGER_ENV, SECONDS_ENV, connect
from ..helpers.stores import sharing_commits

REPO = Path(__file__).resolve().parents[2]
HELPERS = REPO / "tests" / "helpers"
TOOLS = HELPERS / "failover_tools.py"
SCRIPT = HELPERS / "failover_script.json"
TASKS = 200
WORKERS = 3
LEASE_TTL = 2.0
TIME_LIMIT = 180.0  # the whole run, kills included; it takes a fraction of this
KILL_EVERY = (1.0, 2.5)  # seconds between kills, drawn at random
MAX_KILLS = 12
TREE = "tests.engine.child_flows:tree"


class Crew:
    """Worker processes on one store, each logging to a file of its own."""

    def __init__(self, url: str, root: Path, env: dict[str, str]) -> None:
        self.url, self.root, self.env = url, root, env
        self.running: dict[str, subprocess.Popen[bytes]] = {}
        self.killed_pids: set[int] = set()
        self._started = 0

    def start(self, *extra: str) -> str:
        self._started += 1
        name = f"w{self._started}"
        log = (self.root / f"{name}.log").open("wb")
        self.running[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ratchet",
                "worker",
                "--store",
                self.url,
                "--name",
                name,
                "--lease-ttl",
                str(LEASE_TTL),
                "--concurrency",
                "4",
                "--grace",
                "1",
                *extra,
            ],
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        return name

    def kill(self, name: str) -> None:
        process = self.running.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        self.killed_pids.add(process.pid)

    def stop_all(self) -> None:
        for process in self.running.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log(self, name: str) -> str:
        return (self.root / f"{name}.log").read_text(errors="replace")

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
            for path in sorted(self.root.glob("w*.log"))
        )


def _environment(ledger: Path, tool_seconds: float) -> dict[str, str]:
    return {
        **os.environ,
        LEDGER_ENV: str(ledger),
        SECONDS_ENV: str(tool_seconds),
        # The tests' helpers, and the Ratchet this run imports (a source tree named on PYTHONPATH).
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "RATCHET_HOME": str(ledger.parent / "home"),
    }


def _submit(url: str, count: int, home: Path) -> list[str]:
    """Submit `count` tasks; RATCHET_HOME is `home` while they are created (it fixes their workspaces)."""

    async def submit() -> list[str]:
        async with Runtime(url) as rt:
            return [await rt.submit(agent, instruction=f"record build and ship, #{i}") for i in range(count)]

    with pytest.MonkeyPatch.context() as patch:  # not left behind for the tests that run after
        patch.setenv("RATCHET_HOME", str(home))
        agent = build_agent(model=f"scripted:{SCRIPT}", tool_files=[str(TOOLS)])
        return asyncio.run(submit())


def _statuses(url: str) -> Counter[str]:
    async def read() -> Counter[str]:
        store = await open_store(url, create=False)
        try:
            return Counter(str(task.status) for task in await store.list_tasks())
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


def overlaps(history: list[Lease], dead_pids: set[int]) -> list[tuple[Lease, Lease]]:
    """Pairs of claims on one task whose spans overlap, but for takeovers from a process known dead."""
    found = []
    for before, after in itertools.pairwise(history):
        assert after.granted_at is not None
        if after.granted_at >= before.expires_at:
            continue
        if after.took_over and before.pid in dead_pids:
            continue
        found.append((before, after))
    return found


def _ledger(path: Path) -> tuple[Counter[str], dict[str, set[str]], Counter[str]]:
    conn = connect(path)
    try:
        effects = Counter(key for (key,) in conn.execute("SELECT key FROM effects"))
        keys_by_task: dict[str, set[str]] = {}
        for key, task_id in conn.execute("SELECT key, task_id FROM effects"):
            keys_by_task.setdefault(task_id, set()).add(key)
        starts = Counter(key for (key,) in conn.execute("SELECT key FROM starts"))
    finally:
        conn.close()
    return effects, keys_by_task, starts


@pytest.fixture(params=["postgres", "sqlite"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The store the workers share: PostgreSQL (many machines) or a SQLite file (one machine).

    Group commit is on for both (opted in), as in the crash suite.
    """
    if request.param == "sqlite":
        return sharing_commits(f"sqlite:///{tmp_path / 'ratchet.db'}")
    return sharing_commits(str(request.getfixturevalue("postgres_url")))


def test_workers_killed_again_and_again_finish_every_task_once(shared_url: str, tmp_path: Path) -> None:
    postgres_url = shared_url  # the name the checks below use, whichever store it is
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    task_ids = _submit(postgres_url, TASKS, tmp_path / "home")
    crew = Crew(postgres_url, tmp_path, _environment(ledger, tool_seconds=0.1))
    for _ in range(WORKERS):
        crew.start()
    rng = random.Random(7)
    kills = 0
    began = time.monotonic()
    try:
        while time.monotonic() - began < TIME_LIMIT:
            statuses = _statuses(postgres_url)
            if statuses["completed"] == TASKS:
                break
            time.sleep(rng.uniform(*KILL_EVERY))
            if kills < MAX_KILLS:
                crew.kill(rng.choice(sorted(crew.running)))
                kills += 1
                crew.start()
    finally:
        crew.stop_all()
    took = time.monotonic() - began

    statuses = _statuses(postgres_url)
    assert statuses == Counter({"completed": TASKS}), f"after {took:.0f} s: {statuses}\n{crew.logs()}"
    assert kills >= 3, f"the tasks were done after {kills} kills; the test must kill more to mean anything"

    # Every effect exactly once by key: two steps per task, one effect each.
    effects, keys_by_task, starts = _ledger(ledger)
    assert set(keys_by_task) == set(task_ids)
    assert all(len(keys) == 2 for keys in keys_by_task.values()), "a task acted under other keys than its two"
    doubled = {key: count for key, count in effects.items() if count != 1}
    assert doubled == {}, f"effects done more than once: {doubled}"
    assert set(starts) == set(effects)

    # No two workers ever held one task at once; the claims were spread over several workers.
    histories = _histories(postgres_url, task_ids)
    shared = {task_id: overlaps(history, crew.killed_pids) for task_id, history in histories.items()}
    assert {task_id: pairs for task_id, pairs in shared.items() if pairs} == {}
    owners = Counter(lease.owner for history in histories.values() for lease in history)
    assert len(owners) > WORKERS, owners
    moved = sum(len(history) > 1 for history in histories.values())
    assert moved, "no task changed hands"
    print(
        f"{TASKS} tasks in {took:.1f} s, {kills} kills, {moved} tasks changed hands, "
        f"{sum(starts.values()) - len(starts)} tool calls re-run under their key"
    )


TREES, CHILDREN = 16, 4
TREE_KILL_EVERY = (0.5, 1.0)  # trees finish in seconds: kill often enough to land several kills


def test_workers_killed_again_and_again_finish_every_task_tree(shared_url: str, tmp_path: Path) -> None:
    """Parents fanning out to children, workers killed: every parent and child completes, each child
    is started once and does its effect under one key, and no parent is left waiting."""
    url = shared_url
    ledger = tmp_path / "trees.jsonl"

    async def submit() -> list[str]:
        async with Runtime(url) as rt:
            return [
                await rt.submit(
                    f"{TREE}",
                    {"ledger": str(ledger), "name": f"t{i}", "count": CHILDREN, "limit": 2, "seconds": 0.6},
                )
                for i in range(TREES)
            ]

    parents = asyncio.run(submit())
    crew = Crew(url, tmp_path, _environment(tmp_path / "ledger.db", tool_seconds=0.1))
    for _ in range(WORKERS):
        crew.start()
    rng = random.Random(11)
    kills = 0
    began = time.monotonic()
    try:
        while time.monotonic() - began < TIME_LIMIT:
            if _statuses(url) == Counter({"completed": TREES * (CHILDREN + 1)}):
                break
            time.sleep(rng.uniform(*TREE_KILL_EVERY))
            if kills < MAX_KILLS // 2:
                crew.kill(rng.choice(sorted(crew.running)))
                kills += 1
                crew.start()
    finally:
        crew.stop_all()

    statuses = _statuses(url)
    assert statuses == Counter({"completed": TREES * (CHILDREN + 1)}), f"{statuses}\n{crew.logs()}"
    assert kills >= 3

    async def read() -> dict[str, tuple[list[str], list[str], object]]:
        store = await open_store(url, create=False)
        try:
            found: dict[str, tuple[list[str], list[str], object]] = {}
            for parent in parents:
                starts = [op for op in await store.list_ops(parent) if op.kind is OpKind.CHILD]
                started = [
                    str(op.output["child_id"])
                    for op in starts
                    if isinstance(op.output, dict) and op.name == "start_child"
                ]
                children = [child.id for child in await store.list_children(parent)]
                found[parent] = (started, children, (await store.get_task(parent)).result)
            return found
        finally:
            await store.close()

    trees = asyncio.run(read())
    for parent, (started, children, result) in trees.items():
        assert sorted(started) == sorted(children), parent  # each child started once, none lost
        assert len(children) == CHILDREN
        assert isinstance(result, list) and len(set(result)) == CHILDREN
    # One key per child's effect, however often a kill made it run again under that key.
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    keys: dict[str, set[str]] = {}
    for line in lines:
        if "key" in line:
            keys.setdefault(line["label"], set()).add(line["key"])
    assert len(keys) == TREES * CHILDREN
    assert all(len(found) == 1 for found in keys.values()), keys


def test_a_paused_worker_has_its_late_writes_rejected(postgres_url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    [task_id] = _submit(postgres_url, 1, tmp_path / "home")
    crew = Crew(postgres_url, tmp_path, _environment(ledger, tool_seconds=3.0))
    paused = crew.start()
    paused_pid = crew.running[paused].pid
    try:
        _wait_for(lambda: _ledger(ledger)[2], "the first tool call to start")
        os.kill(paused_pid, signal.SIGSTOP)
        time.sleep(LEASE_TTL + 1.0)  # its lease expires while it cannot renew it
        taker = crew.start()
        _wait_for(lambda: _statuses(postgres_url)["completed"] == 1, "the second worker to finish the task")
        os.kill(paused_pid, signal.SIGCONT)
        _wait_for(lambda: "left to another worker" in crew.log(paused), "the paused worker to give up")
    finally:
        os.kill(paused_pid, signal.SIGCONT)
        crew.stop_all()

    history = _histories(postgres_url, [task_id])[task_id]
    assert [lease.owner for lease in history] == [paused, taker]
    assert overlaps(history, set()) == [] and not history[1].took_over
    assert "no longer current" in crew.log(paused) or "released or replaced" in crew.log(paused)
    # The tool the paused worker was in finished after it woke; its result was not written.
    effects, _, starts = _ledger(ledger)
    assert all(count == 1 for count in effects.values())
    assert max(starts.values()) == 2  # run by both: the second worker re-ran it under the same key

    async def journal() -> list[Operation]:
        store = await open_store(postgres_url, create=False)
        try:
            return [op for op in await store.list_ops(task_id) if op.kind is OpKind.TOOL]
        finally:
            await store.close()

    tool_ops = asyncio.run(journal())
    assert tool_ops and all(op.output["pid"] == crew_pid(crew, taker) for op in tool_ops)


def crew_pid(crew: Crew, name: str) -> int:
    return crew.running[name].pid


def _wait_for(check: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_worker_outlives_its_database_connections_being_cut(postgres_url: str, tmp_path: Path) -> None:
    import psycopg

    ledger = tmp_path / "ledger.db"
    connect(ledger).close()
    crew = Crew(postgres_url, tmp_path, _environment(ledger, tool_seconds=0.05))
    name = crew.start()
    try:
        _submit(postgres_url, 1, tmp_path / "home")
        _wait_for(lambda: _statuses(postgres_url)["completed"] == 1, "the first task")
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            cut = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ).fetchone()
        assert cut is not None and cut[0] >= 2  # the pool's connection and the listener's
        _submit(postgres_url, 1, tmp_path / "home")
        _wait_for(lambda: _statuses(postgres_url)["completed"] == 2, "the second task, after the cut")
        assert crew.running[name].poll() is None, crew.log(name)
    finally:
        crew.stop_all()
    assert crew.running[name].returncode == 0, crew.log(name)
