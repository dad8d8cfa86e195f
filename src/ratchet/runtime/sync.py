"""`SyncRuntime`: `Runtime`'s verbs as plain calls, for scripts, notebooks and threaded web servers.

One event loop, in a thread of its own, owns an async `Runtime` and its open
store; each call of a `SyncRuntime` method hands the coroutine to that loop
through anyio's `BlockingPortal` and blocks until it is done. So it works
where no loop runs (a script), where one already runs in the calling thread
(a Jupyter notebook, where ``asyncio.run`` is refused), and from many
threads at once (a WSGI server's): their calls run side by side on the one
loop, as an async program's tasks would.

The loop's thread is a daemon, started here rather than by anyio's
``start_blocking_portal``, whose pool thread Python waits for at exit: a
program that never calls `close` would then hang instead of ending. It is
closed at exit instead (`weakref.finalize`), which closes the store.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import queue
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ParamSpec, TypeVar, cast, overload

import anyio
from anyio.from_thread import BlockingPortal
from pydantic import JsonValue
from typing_extensions import Unpack

from ..agent import Agent
from ..engine.batches import BatchOutcome
from ..engine.replay import ReplayOutcome
from ..engine.retention import Retention, RetentionRule
from ..engine.run.holders import WorkerIdentity
from ..engine.run.runner import DEFAULT_LEASE_TTL
from ..engine.workflow import Workflow, load_workflow
from ..errors import CorruptRecord
from ..limits import MAX_INSTRUCTION_BYTES, PRIORITY_DEFAULT
from ..policy import Budget
from ..records import OLDEST_FIRST, InboxMessage, StreamEntry, Task, TaskFilter, TaskOrder, TaskStatus
from ..store import DEFAULT_STORE_URL
from .evals import EvalReport
from .reading import TaskFilters
from .runtime import _UNSET, Runtime

__all__ = ["SyncRuntime"]

P = ParamSpec("P")
T = TypeVar("T")


def _mirrors(method: Callable[..., Any]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Give a `SyncRuntime` method the docstring of the `Runtime` method it calls: one text for both."""

    def take(mirror: Callable[P, T]) -> Callable[P, T]:
        mirror.__doc__ = method.__doc__
        return mirror

    return take


class _Loop:
    """An event loop in a daemon thread, reached through a `BlockingPortal`."""

    def __init__(self) -> None:
        started: queue.Queue[BlockingPortal] = queue.Queue(maxsize=1)
        self._thread = threading.Thread(target=anyio.run, args=(self._serve, started), daemon=True)
        self._thread.name = "ratchet-sync-runtime"
        self._thread.start()
        self.portal = started.get()

    @staticmethod
    async def _serve(started: queue.Queue[BlockingPortal]) -> None:
        async with BlockingPortal() as portal:
            started.put(portal)
            await portal.sleep_until_stopped()

    def stop(self) -> None:
        self.portal.call(self.portal.stop)
        self._thread.join()


def _cancel(scopes: list[anyio.CancelScope], done: concurrent.futures.Future[Any]) -> None:
    """Cancel a call: its scope if it started, else the call itself (called on the loop)."""
    for scope in scopes:
        scope.cancel()
    if not scopes:
        done.cancel()


def _shut(runtime: Runtime, loop: _Loop) -> None:
    """Close the runtime's store in its loop, then stop the loop (also at exit, for a program that forgot)."""
    try:
        loop.portal.call(runtime.__aexit__, None, None, None)
    finally:
        loop.stop()


class SyncRuntime:
    """Ratchet for code that is not async: ``with SyncRuntime(url) as rt: rt.run(...)``.

    The same verbs as `Runtime`, with the same arguments, each blocking until
    it is done. The store is opened at once, and closed by `close` (or at the
    end of the ``with`` block, or when the program exits). Any number of
    threads may share one `SyncRuntime`. Do not call it from code its own
    runs execute (a workflow or a tool): that code is async; use the context.

    Args:
        store: a store URL (opened in the runtime's own event loop).
        identity, lease_ttl, approval_timeout, allow_code, max_instruction_bytes: as `Runtime`'s.

    Raises:
        StoreError: the store cannot be opened (StoreURLError: the URL names none).
    """

    def __init__(
        self,
        store: str = DEFAULT_STORE_URL,
        *,
        identity: WorkerIdentity | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        approval_timeout: float | None = None,
        allow_code: Iterable[str | Path] = (),
        max_instruction_bytes: int = MAX_INSTRUCTION_BYTES,
    ) -> None:
        if not isinstance(store, str):  # an open store belongs to the loop that opened it
            raise TypeError("SyncRuntime takes a store URL, not an open store")
        self._runtime = Runtime(
            store,
            identity=identity,
            lease_ttl=lease_ttl,
            approval_timeout=approval_timeout,
            allow_code=allow_code,
            max_instruction_bytes=max_instruction_bytes,
        )
        loop = _Loop()
        try:
            loop.portal.call(self._runtime.__aenter__)
        except BaseException:
            loop.stop()
            raise
        self._closing = weakref.finalize(self, _shut, self._runtime, loop)
        self._portal = loop.portal

    def close(self) -> None:
        """Close the store and stop the runtime's loop; calling it again does nothing."""
        self._closing()

    @property
    def closed(self) -> bool:
        return not self._closing.alive

    def __enter__(self) -> SyncRuntime:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def identity(self) -> WorkerIdentity:
        """Who this process is when it holds leases."""
        return self._runtime.identity

    def _call(self, method: Callable[..., Awaitable[T]], /, *args: Any, **kwargs: Any) -> T:
        """Run `method` on the runtime's loop and wait for it.

        Ctrl-C while waiting cancels it there, and waits for it to stop: a
        run lets its lease go (as Ctrl-C in `ratchet run` does) before the
        KeyboardInterrupt goes on, so `resume` can continue the task at once.
        """
        if self.closed:
            raise RuntimeError("this SyncRuntime is closed")
        scopes: list[anyio.CancelScope] = []  # made on the loop, where a cancel scope belongs

        async def call() -> list[T]:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                return [await method(*args, **kwargs)]
            return []  # cancelled by the caller's Ctrl-C, which the caller raises on

        done = self._portal.start_task_soon(call)
        try:
            [result] = done.result()
            return result
        except KeyboardInterrupt:
            self._portal.call(_cancel, scopes, done)
            concurrent.futures.wait([done])
            raise

    # ------------------------------------------------------------------ starting work

    @_mirrors(Runtime.submit)
    def submit(
        self,
        workflow: Workflow | Agent | str,
        inputs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        instruction: str = "",
        model: str | None = None,
        deadline: float | dt.datetime | None = None,
        budget: Budget | None = None,
        task_id: str | None = None,
        queue: bool | str = True,
        at: dt.datetime | None = None,
        approval_timeout: float | None = _UNSET,
        priority: int = PRIORITY_DEFAULT,
        labels: Mapping[str, str] | None = None,
        partition: str | None = None,
    ) -> str:
        return self._call(
            self._runtime.submit,
            workflow,
            inputs,
            name=name,
            instruction=instruction,
            model=model,
            deadline=deadline,
            budget=budget,
            task_id=task_id,
            queue=queue,
            at=at,
            approval_timeout=approval_timeout,
            priority=priority,
            labels=labels,
            partition=partition,
        )

    @_mirrors(Runtime.run)
    def run(
        self, workflow: Workflow | Agent | str, inputs: Mapping[str, Any] | None = None, **options: Any
    ) -> Task:
        return self._call(self._runtime.run, workflow, inputs, **options)

    @_mirrors(Runtime.resume)
    def resume(self, task_id: str, *, force: bool = False) -> Task:
        return self._call(self._runtime.resume, task_id, force=force)

    @_mirrors(Runtime.wait)
    def wait(self, task_id: str, *, timeout: float | None = None, poll: float = 0.2) -> Task:
        return self._call(self._runtime.wait, task_id, timeout=timeout, poll=poll)

    @_mirrors(Runtime.cancel)
    def cancel(self, task_id: str, *, reason: str = "cancelled by a person") -> Task:
        return self._call(self._runtime.cancel, task_id, reason=reason)

    @_mirrors(Runtime.retry)
    def retry(self, task_id: str, *, from_step: int | None = None, queue: bool = True) -> str:
        return self._call(self._runtime.retry, task_id, from_step=from_step, queue=queue)

    @_mirrors(Runtime.fork)
    def fork(
        self,
        task_id: str,
        checkpoint: int | None = None,
        *,
        step: int | None = None,
        inputs: Mapping[str, JsonValue] | None = None,
        model: str | None = None,
        instructions: str | None = None,
        tool_results: Mapping[int, JsonValue] | None = None,
    ) -> str:
        return self._call(
            self._runtime.fork,
            task_id,
            checkpoint,
            step=step,
            inputs=inputs,
            model=model,
            instructions=instructions,
            tool_results=tool_results,
        )

    @_mirrors(Runtime.evaluate)
    def evaluate(
        self,
        model: str,
        /,
        *,
        scorer: str | None = None,
        where: TaskFilter | None = None,
        **filters: Unpack[TaskFilters],
    ) -> EvalReport:
        return self._call(self._runtime.evaluate, model, scorer=scorer, where=where, **filters)

    # ------------------------------------------------------------------ every task a filter keeps

    @_mirrors(Runtime.cancel_tasks)
    def cancel_tasks(
        self,
        where: TaskFilter | None = None,
        /,
        *,
        reason: str = "cancelled by a person",
        **filters: Unpack[TaskFilters],
    ) -> BatchOutcome:
        return self._call(self._runtime.cancel_tasks, where, reason=reason, **filters)

    @_mirrors(Runtime.retry_tasks)
    def retry_tasks(self, where: TaskFilter | None = None, /, **filters: Unpack[TaskFilters]) -> BatchOutcome:
        return self._call(self._runtime.retry_tasks, where, **filters)

    @_mirrors(Runtime.delete_tasks)
    def delete_tasks(
        self, where: TaskFilter | None = None, /, **filters: Unpack[TaskFilters]
    ) -> BatchOutcome:
        return self._call(self._runtime.delete_tasks, where, **filters)

    @_mirrors(Runtime.count_expired)
    def count_expired(
        self, retain: Retention | Mapping[str, str], *, now: dt.datetime | None = None
    ) -> dict[TaskStatus, int]:
        return self._call(self._runtime.count_expired, retain, now=now)

    @_mirrors(Runtime.delete_expired)
    def delete_expired(
        self, retain: Retention | Mapping[str, str], *, now: dt.datetime | None = None
    ) -> dict[RetentionRule, BatchOutcome]:
        return self._call(self._runtime.delete_expired, retain, now=now)

    @_mirrors(Runtime.replay_check)
    def replay_check(
        self,
        where: TaskFilter | None = None,
        /,
        *,
        task_ids: Sequence[str] | None = None,
        load: Callable[[str], Workflow] = load_workflow,
        **filters: Unpack[TaskFilters],
    ) -> list[ReplayOutcome]:
        return self._call(self._runtime.replay_check, where, task_ids=task_ids, load=load, **filters)

    # ------------------------------------------------------------------ people

    @_mirrors(Runtime.approve)
    def approve(
        self, task_id: str, *, edit_args: dict[str, JsonValue] | None = None, seq: int | None = None
    ) -> Task:
        return self._call(self._runtime.approve, task_id, edit_args=edit_args, seq=seq)

    @_mirrors(Runtime.deny)
    def deny(self, task_id: str, reason: str, *, seq: int | None = None) -> Task:
        return self._call(self._runtime.deny, task_id, reason, seq=seq)

    @_mirrors(Runtime.answer)
    def answer(self, task_id: str, text: str) -> Task:
        return self._call(self._runtime.answer, task_id, text)

    @_mirrors(Runtime.resolve)
    def resolve(
        self, task_id: str, seq: int, *, retry: bool = False, skip: bool = False, result: Any = _UNSET
    ) -> Task:
        return self._call(self._runtime.resolve, task_id, seq, retry=retry, skip=skip, result=result)

    @_mirrors(Runtime.send)
    def send(self, task_id: str, name: str, payload: JsonValue = None) -> InboxMessage:
        return self._call(self._runtime.send, task_id, name, payload)

    # ------------------------------------------------------------------ reading

    @_mirrors(Runtime.get_task)
    def get_task(self, task_id: str) -> Task:
        return self._call(self._runtime.get_task, task_id)

    @_mirrors(Runtime.list_tasks)
    def list_tasks(
        self,
        *,
        sort: str | TaskOrder = OLDEST_FIRST,
        newest_first: bool = False,
        limit: int | None = None,
        offset: int = 0,
        unreadable: list[CorruptRecord] | None = None,
        **filters: Unpack[TaskFilters],
    ) -> list[Task]:
        return self._call(
            self._runtime.list_tasks,
            sort=sort,
            newest_first=newest_first,
            limit=limit,
            offset=offset,
            unreadable=unreadable,
            **filters,
        )

    @_mirrors(Runtime.count_tasks)
    def count_tasks(self, **filters: Unpack[TaskFilters]) -> int:
        return self._call(self._runtime.count_tasks, **filters)

    @overload
    def result(self, task_id: str) -> Any: ...

    @overload
    def result(self, task_id: str, as_type: type[T]) -> T: ...

    @_mirrors(Runtime.result)
    def result(self, task_id: str, as_type: Any = None) -> Any:
        return self._call(self._runtime.result, task_id, as_type)

    def stream(self, task_id: str, *, from_offset: int = 0, follow: bool = True) -> Iterator[StreamEntry]:
        """The task's stream, entry by entry, from offset `from_offset` on, as a plain iterator.

        As `Runtime.stream` (docs/streaming.md): with `follow` (the default)
        it blocks for more until the task has ended and every entry is
        given. Each entry is waited for on the runtime's loop, so Ctrl-C
        while it waits stops it at once; leaving the loop early (``break``)
        stops following.

        Raises:
            TaskNotFound: no task has that id.
            InputError: `from_offset` is negative.
        """
        entries = cast(
            AsyncGenerator[StreamEntry, None],
            self._runtime.stream(task_id, from_offset=from_offset, follow=follow),
        )
        try:
            while True:
                try:
                    entry = self._call(entries.__anext__)
                except StopAsyncIteration:
                    return
                yield entry
        finally:
            if not self.closed:
                self._call(entries.aclose)
