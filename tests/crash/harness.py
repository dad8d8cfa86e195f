"""What the crash tests share: a task in its own store, worker processes to start
and kill, recovery until the task settles, and the checks of the durability contract (docs/durability.md).

A `Run` is one task of `flows.order_flow` with its own store (a SQLite file
under its directory, or a fresh PostgreSQL database: `Stores`) and its own
ledger under a directory. Workers are real processes (`worker_command`); a
kill is a SIGKILL, from a crash point inside the worker or from the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ratchet import Event, Operation, Runtime, StepStatus, TaskStatus, WaitReason, open_store
from ratchet.records import OpStatus, utcnow
from ratchet.store import StateStore

from ..helpers.ledger import Ledger
from ..helpers.stores import STORE_URLS, discard, sharing_commits
from .flows import ORDER, REPEATABLE_TOOLS, SCRIPT, STEP_NAMES, TASK_ID, UNKEYED_TOOL, derived_key

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = "tests.crash.flows:order_flow"
LEASE_TTL = 3.0
EXIT_COMPLETED, EXIT_WAITS_ON_PERSON, EXIT_WAITS_ON_TIMER = 0, 3, 4  # ``ratchet resume``'s
KILLED = -signal.SIGKILL
WORKER_TIMEOUT = 30.0  # one worker process, start to exit
MAX_ROUNDS = 4  # unkilled resumes and people's decisions before a task must have completed
STORE_KINDS = ("sqlite", "postgres")

T = TypeVar("T")


def pool_worker_command(store_url: str) -> list[str]:
    """A long-running ``ratchet worker``, as a deployment runs them, polling often."""
    return [
        sys.executable,
        "-m",
        "ratchet",
        "worker",
        "--store",
        store_url,
        "--lease-ttl",
        "1",
        "--poll",
        "0.1",
        "--workflows",
        "tests.crash.flows",
    ]


def worker_command(store_url: str, task_id: str) -> list[str]:
    """The command of one worker process: resume the task until it ends or waits.

    Without a CLI that resumes, use the stand-in with the same exit codes:
    ``[sys.executable, "-m", "tests.crash.driver", store_url, task_id, "--lease-ttl", str(LEASE_TTL)]``.
    """
    return [
        sys.executable,
        "-m",
        "ratchet",
        "resume",
        task_id,
        "--store",
        store_url,
        "--lease-ttl",
        str(LEASE_TTL),
    ]


def write_script(path: Path) -> Path:
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return path


def _with_store(url: str, work: Callable[[StateStore], Awaitable[T]]) -> T:
    async def run() -> T:
        store = await open_store(url)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(run())


# --------------------------------------------------------------------------- a task and its world


@dataclass(frozen=True)
class Snapshot:
    """A task as its store holds it."""

    status: TaskStatus
    waiting_on: WaitReason | None
    result: Any
    steps: tuple[tuple[str, StepStatus], ...]
    ops: tuple[Operation, ...]
    checkpoints: tuple[int, ...]  # the last seq each covers
    triggers: int
    lease_released: bool
    events: tuple[Event, ...]

    @property
    def journal(self) -> tuple[tuple[int, str, str, OpStatus], ...]:
        return tuple((op.seq, str(op.kind), op.name, op.status) for op in self.ops)

    @property
    def outcome(self) -> tuple[Any, ...]:
        """What an uninterrupted run and a recovered one must agree on."""
        return (
            self.status,
            self.waiting_on,
            self.result,
            self.steps,
            self.journal,
            self.checkpoints,
            self.triggers,
            self.lease_released,
        )

    def op(self, name: str) -> Operation | None:
        """The journal's operation called `name` (the first, if several)."""
        return next((op for op in self.ops if op.name == name), None)

    def in_doubt(self) -> list[Operation]:
        return [op for op in self.ops if op.status is OpStatus.STARTED]


class Stores:
    """Hands each run a fresh store of one kind; as a context manager, removes them at its end.

    A SQLite store is a file under the run's directory; a PostgreSQL store is
    a new database on the session's test cluster, dropped at the end.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._made: list[str] = []

    def fresh(self, root: Path) -> str:
        """The URL of a new, empty store for the run kept under `root`."""
        root.mkdir(parents=True, exist_ok=True)
        url = sharing_commits(STORE_URLS[self.kind](root))
        self._made.append(url)
        return url

    def __enter__(self) -> Stores:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for url in self._made:
            discard(url)


@dataclass(frozen=True)
class Place:
    """One crash run's store, and the directory holding its ledger."""

    root: Path
    store_url: str

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.root / "ledger.db")


@dataclass(frozen=True)
class Run(Place):
    """One task of `order_flow`, with its store and ledger under `root`."""

    @property
    def task_id(self) -> str:
        return TASK_ID

    def snapshot(self) -> Snapshot:
        async def read(store: StateStore) -> Snapshot:
            task = await store.get_task(self.task_id)
            steps = await store.list_steps(self.task_id)
            ops = await store.list_ops(self.task_id)
            checkpoints = await store.list_checkpoints(self.task_id)
            lease = await store.get_lease(self.task_id)
            return Snapshot(
                status=task.status,
                waiting_on=task.waiting_on,
                result=task.result,
                steps=tuple((s.name, s.status) for s in steps),
                ops=tuple(ops),
                checkpoints=tuple(c.last_seq for c in checkpoints),
                triggers=len(await store.list_triggers(self.task_id)),
                lease_released=lease is None or lease.released,
                events=tuple(await store.list_events(self.task_id)),
            )

        return _with_store(self.store_url, read)

    def seconds_to_wake(self) -> float:
        """Seconds until the task's last timer trigger is due (0 if none is pending)."""

        async def read(store: StateStore) -> float:
            triggers = await store.list_triggers(self.task_id)
            return max([(t.fire_at - utcnow()).total_seconds() for t in triggers] + [0.0])

        return _with_store(self.store_url, read)

    def resolve(self, seq: int, **choice: Any) -> None:
        async def settle(store: StateStore) -> None:
            async with Runtime(store) as runtime:
                await runtime.resolve(self.task_id, seq, **choice)

        _with_store(self.store_url, settle)


def new_run(root: Path, script: Path, stores: Stores) -> Run:
    """Create the run's store and ledger and submit its task (queued; no worker yet)."""
    run = Run(root, stores.fresh(root))
    run.ledger.create()

    async def submit(store: StateStore) -> None:
        async with Runtime(store) as runtime:
            await runtime.submit(
                WORKFLOW,
                {"order": ORDER, "ledger": run.ledger.path},
                model=f"scripted:{script}",
                task_id=run.task_id,
            )

    _with_store(run.store_url, submit)
    return run


# --------------------------------------------------------------------------- worker processes


def _spawn(command: list[str], crash_at: str | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "RATCHET_CRASH_AT"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    if crash_at is not None:
        env["RATCHET_CRASH_AT"] = crash_at
    return subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def start_worker(run: Run, crash_at: str | None = None) -> subprocess.Popen[str]:
    """Start a worker process on the run's task, armed with a crash point if given."""
    return _spawn(worker_command(run.store_url, run.task_id), crash_at)


def start_task_worker(store_url: str, task_id: str, crash_at: str | None = None) -> subprocess.Popen[str]:
    """Start a worker process on any task of a store, armed with a crash point if given."""
    return _spawn(worker_command(store_url, task_id), crash_at)


def finish_worker(proc: subprocess.Popen[str], kill_at: float | None = None) -> int:
    """Wait for the worker to exit, or SIGKILL it at monotonic time `kill_at`; return its exit code.

    The worker is reaped, so its pid is gone before anyone resumes the task.
    A worker that exits by itself must say the task completed or waits: any
    other exit is an engine error.
    """
    try:
        proc.wait(timeout=WORKER_TIMEOUT if kill_at is None else max(kill_at - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        if kill_at is None:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(
                f"worker still running after {WORKER_TIMEOUT:g} s\nstdout: {out}\nstderr: {err}"
            ) from None
        os.kill(proc.pid, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=WORKER_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    if proc.returncode not in (EXIT_COMPLETED, EXIT_WAITS_ON_PERSON, EXIT_WAITS_ON_TIMER, KILLED):
        raise AssertionError(f"worker exited {proc.returncode}\nstdout: {out}\nstderr: {err}")
    return proc.returncode


def crash_worker(run: Run, crash_at: str) -> Snapshot:
    """Run a worker armed with `crash_at`; it must die of SIGKILL there. Return the task as left."""
    code = finish_worker(start_worker(run, crash_at))
    assert code == KILLED, f"RATCHET_CRASH_AT={crash_at}: the worker exited {code} instead of being killed"
    return run.snapshot()


def work(run: Run, *, kill_after: float | None = None) -> int:
    """One worker's turn on the task: resume it, and again each time its timer is due,
    until it ends or waits on a person; return the last exit code.

    With `kill_after`, whichever worker process runs that many seconds into
    the turn is SIGKILLed (`KILLED` is returned; a moment that falls between
    two processes ends the turn the same way).
    """
    kill_at = None if kill_after is None else time.monotonic() + kill_after
    while True:
        code = finish_worker(start_worker(run), kill_at)
        if code != EXIT_WAITS_ON_TIMER:
            return code
        wake = min(run.seconds_to_wake(), WORKER_TIMEOUT)
        if kill_at is not None and time.monotonic() + wake >= kill_at:
            time.sleep(max(kill_at - time.monotonic(), 0))
            return KILLED
        time.sleep(wake)


# --------------------------------------------------------------------------- recovery


@dataclass
class Recovery:
    """What it took to bring a task to an end after its worker was killed."""

    resumes: int = 0
    kills: int = 0
    in_doubt: list[int] = field(default_factory=list)  # seqs a person was asked about
    person_retries: int = 0


def _audit_calls(run: Run) -> int:
    return sum(n for (tool, _), n in run.ledger.invocations().items() if tool == UNKEYED_TOOL)


def recover(
    run: Run,
    *,
    decide: str = "ledger",
    rng: random.Random | None = None,
    kill_chance: float = 0.0,
    max_kills: int = 0,
    window: float = 0.0,
) -> Recovery:
    """Resume the task in fresh workers until it completes, settling in-doubt calls as a person would.

    Args:
        decide: how a person settles an in-doubt call: ``ledger`` (look at the
            outside world: give the effect's result if it happened, else run
            it again) or ``skip``.
        rng, kill_chance, max_kills, window: with an `rng`, each resume is
            killed with chance `kill_chance` (at most `max_kills` times) at a
            moment uniform in ``[0, window]``.
    """
    recovery = Recovery()
    for _ in range(MAX_ROUNDS + 3 * max_kills):  # a kill costs its round, and may leave a call in doubt
        before = run.snapshot()
        if before.status is TaskStatus.COMPLETED:
            return recovery
        assert not before.status.is_terminal, f"the task ended {before.status}: {before.result}"
        if before.waiting_on is WaitReason.IN_DOUBT:
            _settle_in_doubt(run, before, decide, recovery)
            continue
        audit = before.op(UNKEYED_TOOL)
        audit_in_doubt = audit is not None and audit.status is OpStatus.STARTED
        calls_before = _audit_calls(run)
        recovery.resumes += 1
        kill_after = None
        if rng is not None and recovery.kills < max_kills and rng.random() < kill_chance:
            kill_after = rng.uniform(0, window)
        code = work(run, kill_after=kill_after)
        recovery.kills += code == KILLED
        if audit_in_doubt:
            assert audit is not None
            assert _audit_calls(run) == calls_before, (
                f"{UNKEYED_TOOL} (operation {audit.seq}) was in doubt, and a worker ran it again by itself"
            )
            assert code in (KILLED, EXIT_WAITS_ON_PERSON), f"a resume past an in-doubt call exited {code}"
            assert code == KILLED or run.snapshot().waiting_on is WaitReason.IN_DOUBT
    raise AssertionError(f"task not completed after {recovery}: {run.snapshot().outcome}")


def recover_with_pool_worker(run: Run, *, timeout: float = 30.0) -> Recovery:
    """Let a long-running ``ratchet worker`` finish the task, settling in-doubt calls as `recover` does.

    The worker must find the task by itself (a trigger, or an orphan once the
    killed worker's lease expires) and must not call a tool in doubt.
    """
    recovery = Recovery()
    worker = _spawn(pool_worker_command(run.store_url))
    try:
        settled = _settle_with_pool_worker(run, worker, recovery, timeout)
    finally:
        worker.terminate()
        out, err = worker.communicate(timeout=WORKER_TIMEOUT)
    assert worker.returncode == 0, f"the worker exited {worker.returncode} on SIGTERM\n{out}\n{err}"
    assert settled, f"task not completed after {recovery}: {run.snapshot().outcome}"
    return recovery


def _settle_with_pool_worker(
    run: Run, worker: subprocess.Popen[str], recovery: Recovery, timeout: float
) -> bool:
    for _ in range(MAX_ROUNDS):
        calls_before = _audit_calls(run)
        snap = _wait_settled(run, worker, timeout)
        if snap.status is TaskStatus.COMPLETED:
            return True
        assert snap.waiting_on is WaitReason.IN_DOUBT, snap.outcome
        assert _audit_calls(run) == calls_before, f"{UNKEYED_TOOL} was in doubt, and the worker ran it again"
        _settle_in_doubt(run, snap, "ledger", recovery)
    return False


def _wait_settled(run: Run, worker: subprocess.Popen[str], timeout: float) -> Snapshot:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"the worker exited {worker.returncode}"
        snap = run.snapshot()
        if snap.status.is_terminal or (snap.waiting_on is not None and snap.waiting_on.needs_person):
            return snap
        time.sleep(0.1)
    raise AssertionError(f"a worker left the task unsettled for {timeout:g} s: {run.snapshot().outcome}")


def _settle_in_doubt(run: Run, snap: Snapshot, decide: str, recovery: Recovery) -> None:
    doubtful = snap.in_doubt()
    names = [op.name for op in doubtful]
    assert names == [UNKEYED_TOOL], (
        f"only the unkeyed, non-idempotent tool may wait on a person; in doubt: {names}"
    )
    op = doubtful[0]
    recovery.in_doubt.append(op.seq)
    if decide == "skip":
        run.resolve(op.seq, skip=True)
        return
    output = run.ledger.effect_output(UNKEYED_TOOL, derived_key(UNKEYED_TOOL, entry=op.input["entry"]))
    if output is None:
        recovery.person_retries += 1
        run.resolve(op.seq, retry=True)
    else:
        run.resolve(op.seq, result=output)


# --------------------------------------------------------------------------- the reference and the checks


@dataclass(frozen=True)
class Reference:
    """An uninterrupted run: how it ended, what it did, how long its workers took."""

    final: Snapshot
    effects: Counter[tuple[str, str]]
    duration: float

    @property
    def audit_seq(self) -> int:
        """The seq of the unkeyed audit call, which every run makes."""
        audit = self.final.op(UNKEYED_TOOL)
        assert audit is not None, f"the reference run made no {UNKEYED_TOOL} call"
        return audit.seq


def reference_run(root: Path, script: Path, stores: Stores) -> Reference:
    run = new_run(root, script, stores)
    started = time.monotonic()
    assert work(run) == EXIT_COMPLETED
    duration = time.monotonic() - started
    final = run.snapshot()
    assert final.status is TaskStatus.COMPLETED, final.outcome
    reference = Reference(final, run.ledger.effects(), duration)
    assert_all_steps_completed(final)
    assert_no_duplicate_effects(reference.effects)
    assert_no_unsafe_reinvocation(run, Recovery())
    return reference


def assert_all_steps_completed(final: Snapshot) -> None:
    assert final.steps == tuple((name, StepStatus.COMPLETED) for name in STEP_NAMES), final.steps


def assert_no_duplicate_effects(effects: Counter[tuple[str, str]]) -> None:
    twice = {key: n for key, n in effects.items() if n > 1}
    assert not twice, f"effects recorded more than once under one key: {twice}"


def assert_no_unsafe_reinvocation(run: Run, recovery: Recovery) -> None:
    """Only repeatable tools ran twice, unless a person chose to run a call again."""
    for (tool, key), count in run.ledger.invocations().items():
        if tool not in REPEATABLE_TOOLS:
            assert count <= 1 + recovery.person_retries, (
                f"{tool} ran {count} times under {key} ({recovery.person_retries} run(s) again by a person)"
            )


def assert_outcomes_reported_once(final: Snapshot) -> None:
    """Each journaled outcome, and the task's end, is reported by one event, in the same commit."""
    kinds = Counter(event.kind for event in final.events)
    assert kinds["task_completed"] == 1, kinds
    reported = Counter(
        event.data.get("seq") for event in final.events if event.kind.endswith(("_result", "_failed"))
    )
    assert not {seq: n for seq, n in reported.items() if n > 1}, (
        f"outcomes reported more than once: {reported}"
    )


def assert_recovered(run: Run, reference: Reference, recovery: Recovery) -> None:
    """The task ended as the uninterrupted run did, and nothing happened twice."""
    final = run.snapshot()
    assert final.status is TaskStatus.COMPLETED, final.outcome
    assert_all_steps_completed(final)
    assert_outcomes_reported_once(final)
    effects = run.ledger.effects()
    assert_no_duplicate_effects(effects)
    assert_no_unsafe_reinvocation(run, recovery)
    assert set(effects) == set(reference.effects)
    assert final.result == reference.final.result
    assert final.journal == reference.final.journal
    assert final.checkpoints == reference.final.checkpoints
    assert final.outcome == reference.final.outcome
