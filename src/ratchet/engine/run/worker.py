"""`Worker`: claims due triggers and orphaned tasks, and runs them under leases."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ...errors import CannotResume, CorruptRecord, LeaseLost, RatchetError, StoreError
from ...observe.recording import Recorder, current_recorder
from ...records import Lease, TaskFilter, Trigger, WaitReason, utcnow
from ...schedules import SCHEDULE_TRIGGER, fire_schedule
from ...store import StateStore
from ...store.changes import TRIGGERS, ChangeFeed
from ...trust.code import CodeTrust
from ...trust.seal import SigningKey
from ..calls.in_flight import cut_short
from ..code_version import compatible_versions_allowed, configured_code_version
from ..inbox import RECEIVE_TIMEOUT_TRIGGER, expire_receive
from ..people import APPROVAL_TIMEOUT_TRIGGER, expire_approval
from ..retention import Retention, delete_expired
from ..workflow import Workflow, load_workflow
from .holders import WorkerIdentity, holder_is_gone
from .outage import Outage, Stranded, say_if_forgotten, take_back
from .presence import Presence
from .runner import DEFAULT_LEASE_TTL, run_task
from .unreadable import set_aside_unreadable

__all__ = ["Worker"]

log = logging.getLogger("ratchet.worker")

_WAITING_FOR_CODE = TaskFilter(waiting_on=frozenset({WaitReason.CODE}))


class Worker:
    """Runs tasks from one store, up to `concurrency` at once.

    Each round it takes due triggers (a task to start, a timer that fired, a
    schedule's due time) and claims tasks whose worker died (no live lease,
    nothing queued to wake them), never a task waiting on a person (an
    approval timeout that fires denies the call first, then the task goes
    on). A task whose lease is still live but held by a process of this host
    that no longer exists (a killed ``ratchet run``) is taken over then too,
    without waiting for the lease to expire (`holder_is_gone`). Between
    rounds it sleeps until the next trigger is due, new work is published
    (PostgreSQL's NOTIFY; a short poll on SQLite), a task of its own ends,
    or it is time to look for tasks whose leases expired.

    A task whose code is refused or missing here waits (``waiting(code)``,
    docs/durability.md) and is tried once by each worker, which may have the
    code, or the allowance (`allow_code`): when it starts, and every
    `CODE_RECHECK` seconds it looks for tasks that began to wait since. So is
    a task that started on another version of its code (docs/workers.md,
    "Code versions"): a worker of its version takes it up; one of another
    version runs it only with `compatible_versions` and a replay check of its
    journal that passes, else leaves it waiting and does not try it again. A
    task this worker cannot run otherwise is set aside for a while, longer
    each time, so one bad task neither spins the worker nor starves the
    others. A task whose stored rows cannot be read is set aside in the
    store, for every worker, with an event saying why, and looked at again
    every `UNREADABLE_RECHECK` seconds (`ratchet.engine.run.unreadable`). A store
    that fails (a database restart, a full disk, a failover to a standby) is
    tried again after a pause, longer each time, said once when it begins
    and once when it ends (`Outage`); the worker does not exit. A task the
    store stopped is never set aside as one it cannot run: it is taken back
    as soon as the store answers again, under the lease its run held if that
    is still this worker's, else left to the worker that took it over
    (`Stranded`), or after `STORE_RETRY_MAX` seconds when the store never
    seemed to fail for the worker's own rounds.

    Stopping (`stop` set) is graceful: no new work is taken, each running
    task finishes the call it is in and stops before its next one, its lease
    is released, and another worker resumes it. Tasks still running after
    `grace` seconds are cancelled (their calls are settled on resume).

    With a `retention`, it deletes the ended tasks kept long enough when it
    starts and every `RETENTION_EVERY` seconds after (`delete_expired`), beside
    its work: each task in a short transaction of its own, a page of them at
    a time, so claiming and running go on meanwhile. Several workers may do
    so at once; a task one deleted is no more than skipped by the others.

    While it runs, busy or idle, it keeps a record of itself in the store
    (`Presence`: its name, host, pid and slots, renewed at the leases'
    cadence), which `ratchet workers` lists; a graceful stop removes it.
    """

    SET_ASIDE_FIRST = 5.0
    SET_ASIDE_MAX = 300.0
    STORE_RETRY_FIRST = 0.5
    STORE_RETRY_MAX = 10.0
    UNREADABLE_RECHECK = 300.0
    RETENTION_EVERY = 600.0
    CODE_RECHECK = 5.0

    def __init__(
        self,
        store: StateStore,
        *,
        identity: WorkerIdentity | None = None,
        concurrency: int = 4,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        poll_interval: float = 0.5,
        grace: float = 30.0,
        load: Callable[[str], Workflow] = load_workflow,
        allow_code: Iterable[str | Path] = (),
        retention: Retention | None = None,
        compatible_versions: bool | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.store = store
        self.identity = identity or WorkerIdentity()
        self.concurrency = concurrency
        self.lease_ttl = lease_ttl
        self.poll_interval = poll_interval
        self.grace = grace
        self.load = load
        self.trust = CodeTrust.here(allow_code)
        self.key = SigningKey.from_environment()  # an unusable key stops the worker here, not per task
        configured_code_version()  # so does a RATCHET_CODE_VERSION that is no version
        self.compatible_versions = compatible_versions_allowed(compatible_versions)  # None: the variable's
        # How often to look for tasks whose holder died: their leases expire unannounced.
        # A store that cannot publish (SQLite) is looked at on every poll anyway.
        self.sweep_interval = max(0.5, lease_ttl / 3)
        if store.change_poll is not None:
            self.sweep_interval = min(self.sweep_interval, poll_interval)
        self.stopping = asyncio.Event()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._slots: Recorder | None = None  # where the slots in use and free are reported, while it runs
        self._set_aside: dict[str, tuple[float, float]] = {}  # task id -> (until, last pause)
        self._next_sweep = 0.0
        self._code_retries: list[str] = []  # waiting(code) tasks to try, each once (`_code_tried`)
        self._code_tried: set[str] = set()
        self._next_code_look = 0.0
        self.retention = retention or Retention()
        self._retaining: asyncio.Task[None] | None = None  # the retention pass under way, if any
        self._next_retention = 0.0
        self._outage = Outage(self.identity.name, self.STORE_RETRY_MAX)
        self._stranded = Stranded()  # tasks the store stopped, with the lease each held
        self._leases: dict[str, Lease] = {}  # the lease each running task's run holds

    async def run(self, stop: asyncio.Event | None = None, *, until_idle: bool = False) -> None:
        """Work until `stop` is set (or, with `until_idle`, until there is nothing to do)."""
        stop = stop or asyncio.Event()
        presence = Presence(self.store, self.identity, concurrency=self.concurrency, lease_ttl=self.lease_ttl)
        presence.start()
        self._outage = Outage(self.identity.name, self.STORE_RETRY_MAX)  # its pause as set by now
        self._slots = current_recorder()
        if self._slots is not None:
            self._slots.slots_changed(0, self.concurrency)
        try:
            async with self.store.changes(TRIGGERS) as feed:
                trouble = 0
                while not stop.is_set():
                    try:
                        self._keep_retention()
                        started, more = await self._start_due_work()
                        idle = not started and not more and not self._running and not self._retention_busy()
                        if until_idle and idle:
                            return
                        if self._outage.answered():
                            self._stranded.all_due()  # take back at once what the outage stopped
                            continue
                        if more and len(self._running) < self.concurrency:
                            continue
                        await self._sleep(feed, stop)
                        trouble = 0
                    except StoreError as error:  # the database restarted, failed over, a deadlock ...
                        trouble += 1
                        pause = min(self.STORE_RETRY_FIRST * 2 ** (trouble - 1), self.STORE_RETRY_MAX)
                        self._outage.failed(error)
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(pause):
                                await stop.wait()
        finally:
            await self._stop_retention()
            try:
                await self._stop_running()
            finally:
                await presence.stop()  # after its tasks: it held them until then
                if self._slots is not None:  # this worker's slots leave the gauges
                    busy = len(self._running)
                    self._slots.slots_changed(-busy, busy - self.concurrency)
                    self._slots = None

    async def _sleep(self, feed: ChangeFeed, stop: asyncio.Event) -> None:
        timeout = max(0.0, self._next_sweep - time.monotonic())
        if len(self._running) < self.concurrency:  # when full, a task of its own ending wakes it
            due = await self.store.next_due_at()
            if due is not None:
                timeout = min(timeout, max(0.0, (due - utcnow()).total_seconds()))
        if self.store.change_poll is not None:
            timeout = min(timeout, self.poll_interval)
        if self.retention:
            timeout = min(timeout, max(0.0, self._next_retention - time.monotonic()))
        timeout = min(timeout, max(0.0, self._next_code_look - time.monotonic()))
        retaining = [self._retaining] if self._retention_busy() and self._retaining is not None else []
        heard = asyncio.ensure_future(feed.wait(timeout))
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait(
                [heard, stopped, *self._running.values(), *retaining],
                timeout=timeout + 1,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            heard.cancel()
            stopped.cancel()
        if heard.done() and not heard.cancelled() and heard.result():
            self._next_sweep = 0.0  # a lease was released, or work queued: look at once

    def _retention_busy(self) -> bool:
        return self._retaining is not None and not self._retaining.done()

    def _keep_retention(self) -> None:
        """Start a retention pass beside the work when one is due and none is under way."""
        if not self.retention or self._retention_busy() or time.monotonic() < self._next_retention:
            return
        self._next_retention = time.monotonic() + self.RETENTION_EVERY
        self._retaining = asyncio.create_task(self._apply_retention(), name="ratchet:retention")

    async def _apply_retention(self) -> None:
        try:
            done = await delete_expired(self.store, self.retention)
        except StoreError as error:  # tried again at the next pass
            log.warning("worker %s: retention stopped, the store failed (%s)", self.identity.name, error)
            return
        except Exception:
            log.exception("worker %s: retention failed", self.identity.name)
            return
        for rule, outcome in done.items():
            if outcome.done or outcome.skipped:
                log.info(
                    "retention %s: deleted %d task(s); %d skipped%s",
                    rule,
                    outcome.done,
                    len(outcome.skipped),
                    f" (first: {outcome.skipped[0].task_id}: {outcome.skipped[0].reason})"
                    if outcome.skipped
                    else "",
                )

    async def _stop_retention(self) -> None:
        """Stop a retention pass under way: the task it was deleting is rolled back, whole."""
        if self._retaining is None:
            return
        self._retaining.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._retaining

    async def _stop_running(self) -> None:
        if not self._running:
            return
        self.stopping.set()
        running = list(self._running.values())
        log.info(
            "worker %s: stopping; %d task(s) finish their current call", self.identity.name, len(running)
        )
        try:
            _, late = await asyncio.wait(running, timeout=self.grace)
        except asyncio.CancelledError:  # stopped at once (a second signal)
            late = set(running)
        for task in late:
            cut_short(task)  # its call in flight had its grace: it is not waited for
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*running, return_exceptions=True)

    async def _start_due_work(self) -> tuple[int, bool]:
        """Start what is due; return how many started and whether more may be waiting."""
        started = await self._take_back_stranded()
        started += await self._retry_tasks_waiting_for_code()
        more = False
        free = self.concurrency - len(self._running)
        if free > 0:
            triggers = await self._claim_triggers(free)
            # A fired schedule queued its task's start: look again at once.
            more = len(triggers) == free or any(t.task_id is None for t in triggers)
            for trigger in triggers:
                if trigger.task_id is not None and self._start(trigger.task_id):
                    started += 1
        free = self.concurrency - len(self._running)
        if free > 0 and time.monotonic() >= self._next_sweep:
            now = time.monotonic()
            aside = {task_id for task_id, (until, _) in self._set_aside.items() if until > now}
            leases = await self.store.claim_tasks(
                self.identity.name,
                self.lease_ttl,
                host=self.identity.host,
                pid=self.identity.pid,
                pid_space=self.identity.pid_space,
                pid_started=self.identity.pid_started,
                limit=free,
                skip=aside | set(self._running) | self._stranded.ids(),
            )
            for lease in leases:
                if self._start(lease.task_id, lease):
                    started += 1
                else:  # claimed, but this worker is stopping meanwhile: give it back at once
                    with contextlib.suppress(LeaseLost):
                        await self.store.release_lease(lease)
            if len(leases) == free:
                more = True
            else:
                started += await self._take_over_from_the_dead(free - len(leases))
                self._next_sweep = now + self.sweep_interval
        return started, more

    async def _take_back_stranded(self) -> int:
        """Take back the tasks the store stopped, under the leases their runs held if still ours."""
        started = 0
        for task_id, held in self._stranded.due(time.monotonic()):
            if len(self._running) >= self.concurrency or self.stopping.is_set():
                break
            mine = None if held is None else await take_back(self.store, self.identity, self.lease_ttl, held)
            self._stranded.drop(task_id)  # not taken back: another worker's, or an orphan for the sweep
            if mine is None:
                continue
            if self._start(task_id, mine):
                started += 1
            else:
                with contextlib.suppress(LeaseLost):
                    await self.store.release_lease(mine)
        return started

    async def _take_over_from_the_dead(self, free: int) -> int:
        """Start tasks whose live lease a process of this host holds that no longer exists.

        Their leases would keep every worker off them until they expire; run_task
        takes them over at once (its claim bumps the token, fencing out the holder,
        as a claim after expiry does).
        """
        started = 0
        for held in await self.store.held_orphans(self.identity.host, self.identity.pid_space):
            if started == free:
                break
            if not holder_is_gone(held):
                continue
            if self._start(held.task_id):
                started += 1
                log.info(
                    "task %s: its holder %s (pid %d on %s) no longer runs; taking it over now, "
                    "not when its lease expires at %s UTC",
                    held.task_id,
                    held.owner,
                    held.pid,
                    held.host,
                    f"{held.expires_at:%H:%M:%S}",
                )
        return started

    async def _retry_tasks_waiting_for_code(self) -> int:
        """Try each task waiting for its code once, as slots free up: the code may be here now.

        They are listed when the worker starts and every `CODE_RECHECK` seconds
        after: a task another worker set aside meanwhile (one of another code
        version) is found without a person. One this worker tried and left
        waiting is not tried again by it (it would leave it again).
        """
        now = time.monotonic()
        if now >= self._next_code_look:
            self._next_code_look = now + self.CODE_RECHECK
            # Only their ids, filtered in the store: every few seconds, whatever else waits (thousands
            # of approvals) is never read. (A row that cannot be read is left out here: claimed, it is
            # set aside as unreadable.)
            waiting = await self.store.list_task_rows(_WAITING_FOR_CODE, unreadable=[])
            listed = set(self._code_retries)
            self._code_retries += [
                row.id for row in waiting if row.id not in self._code_tried and row.id not in listed
            ]
        started = 0
        while self._code_retries and len(self._running) < self.concurrency:
            task_id = self._code_retries.pop(0)
            if self._start(task_id):  # one not started now (set aside, stopping) is listed again
                self._code_tried.add(task_id)
                started += 1
        return started

    async def _claim_triggers(self, limit: int) -> list[Trigger]:
        async with self.store.transaction() as tx:
            dropped: list[CorruptRecord] = []
            triggers = await tx.claim_due_triggers(limit=limit, unreadable=dropped)
            for row in dropped:
                log.error("%s; it was taken off the queue", row.message)
            for trigger in triggers:
                if trigger.kind == SCHEDULE_TRIGGER:
                    made = await fire_schedule(tx, trigger)
                    if made is not None:
                        log.info("schedule %s: made task %s", trigger.payload.get("id"), made.id)
                elif trigger.kind == APPROVAL_TIMEOUT_TRIGGER and await expire_approval(tx, trigger):
                    log.info("task %s: approval timed out; the call is denied", trigger.task_id)
                elif trigger.kind == RECEIVE_TIMEOUT_TRIGGER:
                    await expire_receive(tx, trigger)  # queued: a worker that dies now leaves it findable
        return triggers

    def _start(self, task_id: str, lease: Lease | None = None) -> bool:
        until, _ = self._set_aside.get(task_id, (0.0, 0.0))
        if task_id in self._running or until > time.monotonic() or self.stopping.is_set():
            return False
        if lease is None and task_id in self._stranded:  # a wake-up: it is taken back under its lease
            return False
        runner = asyncio.create_task(self._run_one(task_id, lease), name=f"ratchet:{task_id}")
        self._running[task_id] = runner
        runner.add_done_callback(lambda _: self._slot_freed(task_id))
        if self._slots is not None:
            self._slots.slots_changed(1, -1)
        return True

    def _slot_freed(self, task_id: str) -> None:
        self._leases.pop(task_id, None)
        if self._running.pop(task_id, None) is not None and self._slots is not None:
            self._slots.slots_changed(-1, 1)

    async def _run_one(self, task_id: str, lease: Lease | None) -> None:
        log.info("task %s: taken", task_id)
        try:
            task = await run_task(
                self.store,
                task_id,
                worker=self.identity,
                lease_ttl=self.lease_ttl,
                load=self.load,
                lease=lease,
                stopping=self.stopping,
                trust=self.trust,
                key=self.key,
                compatible_versions=self.compatible_versions,
                claimed=lambda held: self._leases.__setitem__(task_id, held),
            )
        except asyncio.CancelledError:
            log.info("task %s: stopped here; its lease is released for another worker", task_id)
            raise
        except (CannotResume, LeaseLost) as gone:
            held = self._leases.get(task_id)
            if isinstance(gone, LeaseLost) and held is not None and await self._forgotten(held):
                return  # not another worker's: the database lost this worker's claim (a failover)
            log.info("task %s: left to another worker: %s", task_id, gone)
        except CorruptRecord as unreadable:
            await self._set_aside_unreadable(task_id, unreadable)
        except StoreError as error:  # not the task's fault: it stays resumable, taken back once the store is
            self._stranded.add(task_id, self._leases.get(task_id), time.monotonic() + self.STORE_RETRY_MAX)
            self._outage.failed(error)
            log.info("task %s: stopped where its journal stands, resumable, by the store's failure", task_id)
        except RatchetError as error:
            self._put_aside(task_id, str(error))
        except Exception as error:
            log.exception("task %s: unexpected error", task_id)
            self._put_aside(task_id, f"{type(error).__name__}: {error}")
        else:
            self._set_aside.pop(task_id, None)
            if task.waiting_on is not WaitReason.CODE:  # should it wait for its code again, try it again
                self._code_tried.discard(task_id)
            if self.stopping.is_set() and not task.status.is_terminal and task.waiting_on is None:
                log.info("task %s: handed back at a call boundary; another worker resumes it", task_id)
            else:
                log.info("task %s: %s%s", task_id, task.status_text, f" ({task.error})" if task.error else "")

    async def _forgotten(self, held: Lease) -> bool:
        try:
            return await say_if_forgotten(self.store, held)
        except StoreError:  # the store failing again: the lease is what it seemed, lost
            return False

    async def _set_aside_unreadable(self, task_id: str, problem: CorruptRecord) -> None:
        try:
            new = await set_aside_unreadable(self.store, task_id, problem, recheck_in=self.UNREADABLE_RECHECK)
        except StoreError as error:
            self._put_aside(task_id, f"{problem.message}; setting it aside in the store failed: {error}")
            return
        if new:  # once per problem: a recheck that finds it unrepaired says nothing new
            log.error(
                "task %s: set aside, %s; looked at again every %g s",
                task_id,
                problem.message,
                self.UNREADABLE_RECHECK,
            )

    def _put_aside(self, task_id: str, why: str) -> None:
        _, last = self._set_aside.get(task_id, (0.0, 0.0))
        pause = min(last * 2 or self.SET_ASIDE_FIRST, self.SET_ASIDE_MAX)
        self._set_aside[task_id] = (time.monotonic() + pause, pause)
        log.error("task %s: cannot run here (%s); trying again in %g s", task_id, why, pause)
