"""`Worker`: claims due triggers and orphaned tasks, and runs them under leases."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from ..errors import CannotResume, LeaseLost, RatchetError
from ..store import StateStore
from .people import APPROVAL_TIMEOUT_TRIGGER, expire_approval
from .runner import DEFAULT_LEASE_TTL, WorkerIdentity, run_task
from .workflow import Workflow, load_workflow

__all__ = ["Worker"]

log = logging.getLogger("ratchet.worker")


class Worker:
    """Runs tasks from one store, up to `concurrency` at once.

    Each round it takes due triggers (a task to start, a timer that fired)
    and tasks whose worker died (no live lease, nothing queued to wake them),
    never a task waiting on a person (an approval timeout that fires denies
    the call first, then the task goes on). A task this worker cannot run (its
    workflow does not load here, say) is set aside for a while, longer each
    time, so one bad task neither spins the worker nor starves the others.
    """

    SET_ASIDE_FIRST = 5.0
    SET_ASIDE_MAX = 300.0

    def __init__(
        self,
        store: StateStore,
        *,
        identity: WorkerIdentity | None = None,
        concurrency: int = 4,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        poll_interval: float = 0.5,
        load: Callable[[str], Workflow] = load_workflow,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.store = store
        self.identity = identity or WorkerIdentity()
        self.concurrency = concurrency
        self.lease_ttl = lease_ttl
        self.poll_interval = poll_interval
        self.load = load
        self._running: dict[str, asyncio.Task[None]] = {}
        self._set_aside: dict[str, tuple[float, float]] = {}  # task id -> (until, last pause)

    async def run(self, stop: asyncio.Event | None = None, *, until_idle: bool = False) -> None:
        """Work until `stop` is set (or, with `until_idle`, until there is nothing to do)."""
        stop = stop or asyncio.Event()
        try:
            while not stop.is_set():
                started = await self._start_due_work()
                if until_idle and not started and not self._running:
                    return
                waiters = [*self._running.values(), asyncio.ensure_future(stop.wait())]
                await asyncio.wait(waiters, timeout=self.poll_interval, return_when=asyncio.FIRST_COMPLETED)
                waiters[-1].cancel()
        finally:
            for running in self._running.values():
                running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*self._running.values(), return_exceptions=True)

    async def _start_due_work(self) -> int:
        started = 0
        free = self.concurrency - len(self._running)
        if free > 0:
            for trigger in await self.store.claim_due_triggers(limit=free):
                if trigger.kind == APPROVAL_TIMEOUT_TRIGGER and await expire_approval(self.store, trigger):
                    log.info("task %s: approval timed out; the call is denied", trigger.task_id)
                if trigger.task_id is not None and self._start(trigger.task_id):
                    started += 1
        free = self.concurrency - len(self._running)
        if free > 0:
            now = time.monotonic()
            aside = {task_id for task_id, (until, _) in self._set_aside.items() if until > now}
            for task in await self.store.list_orphaned_tasks(limit=free + len(aside)):
                if task.id not in aside and started < free and self._start(task.id):
                    started += 1
        return started

    def _start(self, task_id: str) -> bool:
        until, _ = self._set_aside.get(task_id, (0.0, 0.0))
        if task_id in self._running or until > time.monotonic():
            return False
        runner = asyncio.create_task(self._run_one(task_id), name=f"ratchet:{task_id}")
        self._running[task_id] = runner
        runner.add_done_callback(lambda _: self._running.pop(task_id, None))
        return True

    async def _run_one(self, task_id: str) -> None:
        log.info("task %s: taken", task_id)
        try:
            task = await run_task(
                self.store, task_id, worker=self.identity, lease_ttl=self.lease_ttl, load=self.load
            )
        except asyncio.CancelledError:
            log.info("task %s: stopped here; its lease is released for another worker", task_id)
            raise
        except (CannotResume, LeaseLost) as gone:
            log.info("task %s: left to another worker: %s", task_id, gone)
        except RatchetError as error:
            self._put_aside(task_id, str(error))
        except Exception as error:
            log.exception("task %s: unexpected error", task_id)
            self._put_aside(task_id, f"{type(error).__name__}: {error}")
        else:
            self._set_aside.pop(task_id, None)
            log.info("task %s: %s%s", task_id, task.status_text, f" ({task.error})" if task.error else "")

    def _put_aside(self, task_id: str, why: str) -> None:
        _, last = self._set_aside.get(task_id, (0.0, 0.0))
        pause = min(last * 2 or self.SET_ASIDE_FIRST, self.SET_ASIDE_MAX)
        self._set_aside[task_id] = (time.monotonic() + pause, pause)
        log.error("task %s: cannot run here (%s); trying again in %g s", task_id, why, pause)
