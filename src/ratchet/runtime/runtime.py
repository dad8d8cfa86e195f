"""`Runtime`: the Python API over a store: submit, run, resume, wait, resolve, fork, retry, gc.

Its reads (`get_task`, `list_tasks`, `result`) are in `reading.py`, its schedules in
`scheduling.py`, its verbs for every task a filter keeps (`cancel_tasks` ...) in
`batch.py`; `SyncRuntime` (`sync.py`) is the same API for code that is not async.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ..agent import Agent
from ..engine.inbox import send_message
from ..engine.people import (
    answer_question,
    describe_wait,
    pending_question,
    resolve_in_doubt,
    settle_approval,
)
from ..engine.run.cancelling import cancel_task
from ..engine.run.code_wait import reseal
from ..engine.run.holders import WorkerIdentity
from ..engine.run.runner import DEFAULT_LEASE_TTL, run_task
from ..engine.run.staleness import stale_message
from ..engine.run.tree import run_tree
from ..engine.task_spec import new_task
from ..engine.workflow import Workflow
from ..errors import CannotResume, InputError
from ..limits import MAX_INSTRUCTION_BYTES, PRIORITY_DEFAULT, check_text
from ..policy import Budget
from ..records import (
    InboxMessage,
    Task,
    TaskStatus,
    WaitReason,
)
from ..store import DEFAULT_STORE_URL, StateStore, open_store
from ..trust.code import CodeTrust
from ..trust.seal import SigningKey
from .batch import BatchMethods
from .evals import EvalMethods
from .fork import fork_task, retry_task
from .reading import ReadingMethods
from .replay_check import ReplayCheckMethods
from .scheduling import ScheduleMethods
from .sessions import SessionMethods
from .sharing import SharingMethods
from .streams import StreamMethods
from .task_ids import create_or_find, stands_as_it_is
from .what_if import WhatIf

__all__ = ["Runtime"]

_UNSET: Any = object()


class Runtime(
    ReadingMethods,
    BatchMethods,
    ScheduleMethods,
    SessionMethods,
    SharingMethods,
    StreamMethods,
    EvalMethods,
    ReplayCheckMethods,
):
    """Ratchet for Python programs; use as ``async with Runtime(url) as rt:``.

    Args:
        store: a store URL, or an open `StateStore` (then the caller closes it).
        identity: who this process is when it holds leases.
        lease_ttl: seconds a lease lasts without a heartbeat.
        approval_timeout: seconds a tool call of the tasks submitted here
            waits for a person's approval before it is denied (default:
            no limit); `submit` can set it per task.
        allow_code: paths and module names whose code the tasks run here
            may import, beyond the project root (the current directory) and
            installed packages (docs/durability.md, "Who may run code").
            The code of tasks submitted through this Runtime is admitted too.
        max_instruction_bytes: `submit`, `run` and `schedule` refuse an
            instruction larger than this, in bytes of UTF-8 (default 256 KB).
    """

    def __init__(
        self,
        store: str | StateStore = DEFAULT_STORE_URL,
        *,
        identity: WorkerIdentity | None = None,
        lease_ttl: float = DEFAULT_LEASE_TTL,
        approval_timeout: float | None = None,
        allow_code: Iterable[str | Path] = (),
        max_instruction_bytes: int = MAX_INSTRUCTION_BYTES,
    ) -> None:
        self._url = store if isinstance(store, str) else None
        self._store = None if isinstance(store, str) else store
        self.identity = identity or WorkerIdentity()
        self.lease_ttl = lease_ttl
        self.approval_timeout = approval_timeout
        self._allow_code = list(allow_code)
        self._admitted: list[str] = []  # the code of tasks submitted here
        # The workflows handed over here, by reference: `result` types with their own classes (a
        # script's `__main__` ones), not those of a second copy of their file loaded by reference.
        self._workflows: dict[str, Workflow] = {}
        self._signing_key: SigningKey | None = None
        self.max_instruction_bytes = max_instruction_bytes

    async def __aenter__(self) -> Runtime:
        if self._store is None:
            assert self._url is not None
            self._store = await open_store(self._url)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._url is not None and self._store is not None:
            await self._store.close()
            self._store = None

    @property
    def trust(self) -> CodeTrust:
        """What code the tasks run here may load (made when first needed, from the current directory).

        Raises:
            InputError: an allowance (or ``RATCHET_ALLOW_CODE``) is neither a path nor a module name.
        """
        trust = CodeTrust.here(self._allow_code)
        for source in self._admitted:
            with contextlib.suppress(InputError):  # not a name code can have: it won't load anyway
                trust = trust.allowing(source)
        return trust

    @property
    def signing_key(self) -> SigningKey:
        """The key this Runtime seals its tasks' code references with (read when first needed).

        Raises:
            InputError: the key given is too short, or its file cannot be read or made.
        """
        if self._signing_key is None:
            self._signing_key = SigningKey.from_environment()
        return self._signing_key

    @property
    def store(self) -> StateStore:
        if self._store is None:
            raise RuntimeError("use the Runtime inside `async with`")
        return self._store

    # ------------------------------------------------------------------ starting work

    async def submit(
        self,
        workflow: Workflow | Agent | str,
        inputs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        instruction: str = "",
        model: str | Sequence[str] | None = None,
        fallback_on_pressure: bool = False,
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
        """Create a task for `workflow` (or an `Agent`) and queue it for a worker; return its id.

        For an `Agent`, the task runs the planning agent on `instruction`
        with the agent's model, tools and budget, in its own workspace.

        A `task_id` that names a task already returns its id (`ratchet.runtime.task_ids`).

        Args:
            model: ``provider:name``, or a fallback chain of them: a list, the
                first the task's model, each next one called when the one
                before fails for good (docs/providers.md, "Fallback chains").
            fallback_on_pressure: once the task's budget is 80 % used, call
                the chain's next model (docs/limits.md).
            deadline: an absolute time, or seconds from now; kept as an absolute time.
            queue: put a start trigger for workers. Without it the task is
                created for this process to run; if this process dies first,
                workers still find it (a queued task nothing will wake). A
                name (``queue="emails"``) queues it in that queue, whose
                concurrency (``ratchet limit set queue:emails --concurrency
                N``) every worker holds to (docs/rate-limits.md).
            partition: the queue's partition the task runs in (a tenant, a
                user): the queue's concurrency then holds per partition.
            at: when workers may start it (default: now); needs `queue`.
            approval_timeout: seconds a call waits for approval before it is
                denied; None for no limit (default: the Runtime's).
            priority: from 0 (most urgent) to 9; 5 by default. Workers claim
                the due work of the lowest number first; every later wake-up
                of the task (a retry, an answer, an approval) keeps it.
            name: what the task is called, to list and find it by (default:
                the agent's or the workflow's name).
            labels: ``key: value`` pairs to find the task by (`list_tasks`,
                ``ratchet tasks --label``); given once, they never change
                (docs/finding-tasks.md).

        Raises:
            InputError: the instruction is not UTF-8 text or is larger than
                ``max_instruction_bytes``; the deadline or priority is out of range;
            a label's key or value is not one.
        """
        if at is not None and not queue:
            raise InputError("a task to start later must be queued for a worker")
        task = self._new_task(
            workflow,
            inputs,
            queue=queue if isinstance(queue, str) else None,
            partition=partition,
            name=name,
            instruction=instruction,
            model=model,
            fallback_on_pressure=fallback_on_pressure,
            deadline=deadline,
            budget=budget,
            task_id=task_id,
            approval_timeout=approval_timeout,
            priority=priority,
            labels=labels,
        )
        task, _ = await create_or_find(self.store, task, queue=bool(queue), at=at)
        return task.id

    def _new_task(
        self,
        workflow: Workflow | Agent | str,
        inputs: Mapping[str, Any] | None,
        *,
        approval_timeout: float | None = _UNSET,
        **options: Any,
    ) -> Task:
        if approval_timeout is _UNSET:
            approval_timeout = self.approval_timeout
        if isinstance(workflow, Workflow):
            self._workflows[workflow.reference] = workflow
        return new_task(
            workflow,
            inputs,
            approval_timeout=approval_timeout,
            max_instruction_bytes=self.max_instruction_bytes,
            admit=self._admit,
            key=self.signing_key,
            **options,
        )

    def _admit(self, *sources: str) -> None:
        """What this program hands over itself it trusts: its runs here may load that code."""
        for source in sources:
            admitted = str(Path(source).resolve()) if source.endswith(".py") else source
            if admitted not in self._admitted:
                self._admitted.append(admitted)

    async def run(
        self, workflow: Workflow | Agent | str, inputs: Mapping[str, Any] | None = None, **options: Any
    ) -> Task:
        """Create a task and run it here until it ends or waits.

        Takes `submit`'s options. A ``priority`` given here orders nothing now
        (the task runs at once) but is kept: a worker that later takes up one
        of its wake-ups (after an approval, say) claims it at that priority.
        If a worker on the same store adopts the task first, this waits for it instead.

        A `task_id` that names a task already runs that one (`ratchet.runtime.task_ids`).
        """
        options.setdefault("approval_timeout", _UNSET)
        task, created = await create_or_find(
            self.store, self._new_task(workflow, inputs, **options), queue=False, at=None
        )
        task_id = task.id
        if not created and stands_as_it_is(task):
            return task
        try:
            return await self.resume(task_id)
        except CannotResume:
            if (await self.store.get_lease(task_id)) is None:
                raise
            return await self.wait(task_id)

    async def seal(self, task_id: str) -> Task:
        """Seal a task's code references as they stand, once a person has checked them.

        For a task waiting for its code because its references hold no seal
        of this Runtime's key (made before seals, with another key, or
        changed in the database): after this, `resume` runs it. Its workflow
        is loaded (as `trust` admits) to learn which inputs name code.

        Raises:
            TaskNotFound: no such task.
            CodeUnavailable: its workflow is refused here or does not load.
        """
        with self.trust.enforced():
            return await reseal(self.store, task_id, self.signing_key)

    async def resume(
        self, task_id: str, *, force: bool = False, compatible_versions: bool | None = None
    ) -> Task:
        """Run a task here from where its journal stopped, until it ends or waits.

        Takes over a task whose lease expired or was released, or whose holder
        was a process on this host that no longer exists. A task waiting for
        its code (``waiting(code)``) is tried again. Its code is loaded only
        as `trust` admits; if it is refused or missing, the task is returned
        ``waiting(code)``. A task that started on another version of its code
        runs here only with `compatible_versions` (default:
        ``RATCHET_COMPATIBLE_VERSIONS``) and a replay check of its journal that
        passes, else it is returned ``waiting(code)`` (docs/workers.md, "Code versions").

        A task that completed is returned as it is: it is done. A task that
        waits on its child tasks has them run here too (and itself again
        when they end), until it ends or waits on a person or a timer.

        Raises:
            CannotResume: the task failed or was cancelled (`retry` makes a new
                attempt), waits on a person, is held by a live worker, or (unless
                `force`) is older than its checkpoint policy's ``max_age`` allows:
                it is then set aside ``waiting(stale)`` (docs/durability.md,
                "Validate before resume").
            StoreError: the store failed while the task ran (a full disk, say);
                the task has not failed and can be resumed once the store is fixed.
        """
        task = await self.store.get_task(task_id)
        if task.status is TaskStatus.COMPLETED:
            return task  # done already: its outcome stands, as a validate-and-resume finds it
        if task.status.is_terminal:
            raise CannotResume(
                f"task {task_id} is already {task.status}; `ratchet retry {task_id}` starts a new attempt"
            )
        if task.waiting_on is WaitReason.STALE and not force:
            raise CannotResume(await stale_message(self.store, task))
        if (
            task.waiting_on is not None
            and task.waiting_on.needs_person
            and task.waiting_on not in (WaitReason.CODE, WaitReason.STALE)
        ):
            raise CannotResume(await self._waiting_message(task))
        resumed = await run_task(
            self.store,
            task_id,
            worker=self.identity,
            lease_ttl=self.lease_ttl,
            trust=self.trust,
            force=force,
            key=self.signing_key,
            compatible_versions=compatible_versions,
        )
        if resumed.waiting_on is WaitReason.CHILDREN:  # its children run here too, then it again
            resumed = await run_tree(self.store, task_id, self._run_here)
        if resumed.waiting_on is WaitReason.STALE:  # judged too old just now: set aside, and said so
            raise CannotResume(await stale_message(self.store, resumed))
        return resumed

    async def _run_here(self, task_id: str) -> Task:
        return await run_task(
            self.store,
            task_id,
            worker=self.identity,
            lease_ttl=self.lease_ttl,
            trust=self.trust,
            key=self.signing_key,
        )

    async def wait(self, task_id: str, *, timeout: float | None = None, poll: float = 0.2) -> Task:
        """Wait until the task ends or waits on a person; return it then."""
        import asyncio

        async def settled() -> Task:
            while True:
                task = await self.store.get_task(task_id)
                if task.status.is_terminal or (task.waiting_on is not None and task.waiting_on.needs_person):
                    return task
                await asyncio.sleep(poll)

        return await asyncio.wait_for(settled(), timeout)

    async def cancel(self, task_id: str, *, reason: str = "cancelled by a person") -> Task:
        """Cancel a task that has not ended; a worker running it stops at its next write.

        The lease is taken over (its token grows), so the worker that held
        the task finds its lease lost and stops without writing; then the
        task, its open steps and its queued triggers are cancelled together.

        Raises:
            CannotResume: the task already ended.
            InputError: the reason holds a NUL character.
        """
        check_text(reason, "the reason")
        return await cancel_task(
            self.store, task_id, reason=reason, identity=self.identity, lease_ttl=self.lease_ttl
        )

    # ------------------------------------------------------------------ people

    async def resolve(
        self, task_id: str, seq: int, *, retry: bool = False, skip: bool = False, result: Any = _UNSET
    ) -> Task:
        """Settle an operation that was in flight when its worker died (``waiting(in_doubt)``).

        Exactly one of: `retry` (run it again), `skip` (treat it as done,
        with no result), `result` (treat it as done with this result). The
        task is then queued for a worker (or ``resume``).

        Raises:
            InputError: the task does not wait on that operation, or the
                choice is not exactly one.
        """
        if sum((retry, skip, result is not _UNSET)) != 1:
            raise InputError("choose exactly one of --retry, --skip or --result JSON")
        return await resolve_in_doubt(self.store, task_id, seq, retry=retry, skip=skip, result=result)

    async def approve(
        self, task_id: str, *, edit_args: dict[str, JsonValue] | None = None, seq: int | None = None
    ) -> Task:
        """Approve the tool call a task waits for (``waiting(approval)``); it then runs.

        Args:
            edit_args: run the call with these arguments instead of the model's.
            seq: approve only if the call waiting is this operation (the one a person saw).

        Raises:
            AlreadyDecided: the call was decided already and the task has not run it yet.
            InputError: the task does not wait for an approval (of `seq`).
        """
        if edit_args is not None and not isinstance(edit_args, dict):
            raise InputError('the edited arguments must be a JSON object, e.g. {"to": "ops@example.com"}')
        # Checking the edits loads the task's code here: only as this runtime's trust admits it.
        with self.trust.enforced():
            await settle_approval(self.store, task_id, approve=True, edit_args=edit_args, seq=seq)
        return await self.store.get_task(task_id)

    async def deny(self, task_id: str, reason: str, *, seq: int | None = None) -> Task:
        """Deny the tool call a task waits for; the call fails as denied and the task goes on.

        With `seq`, only if the call waiting is this operation (the one a person saw).

        Raises:
            AlreadyDecided: the call was decided already and the task has not run it yet.
            InputError: the task does not wait for an approval (of `seq`), or no reason is
                given (or it holds a NUL character).
        """
        if not reason.strip():
            raise InputError("say why the call is denied (--reason TEXT); the agent is told")
        check_text(reason, "the reason")
        await settle_approval(self.store, task_id, approve=False, reason=reason, seq=seq)
        return await self.store.get_task(task_id)

    async def answer(self, task_id: str, text: str) -> Task:
        """Answer the question a task waits on (``waiting(input)``); it goes on with the answer.

        Raises:
            InputError: the task does not wait for an answer, or the answer holds a NUL character.
        """
        check_text(text, "the answer")
        await answer_question(self.store, task_id, text)
        return await self.store.get_task(task_id)

    async def send(self, task_id: str, name: str, payload: JsonValue = None) -> InboxMessage:
        """Send a message to a task; its workflow gets it from ``ctx.receive(name)`` (docs/team.md).

        Kept in the task's durable inbox until received, exactly once, in
        the order sent; a task waiting for a message is queued to go on.

        Raises:
            TaskNotFound: no task has that id.
            InputError: the task already ended, or the payload is not JSON.
        """
        return await send_message(self.store, task_id, name, payload)

    async def _waiting_message(self, task: Task) -> str:
        async with self.store.reading() as tx:
            what = describe_wait(
                task, await tx.list_approvals(task.id, pending_only=True), await pending_question(tx, task.id)
            )
        return (
            f"task {task.id} is waiting for {what}; it does not resume by itself "
            f"(`ratchet show {task.id}` tells what it waits on)"
        )

    # ------------------------------------------------------------------ time travel and upkeep

    async def fork(
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
        """Start a new task from one of a task's checkpoints or steps; the original is not touched.

        The new task gets the original's journal up to that point, so it
        replays that far and runs live from there. It keeps the original's
        budget but not its deadline (an absolute time, likely past) nor its
        workspace. It is queued for a worker (or ``resume``). Give exactly
        one of `checkpoint` and `step`; the overrides make it a what-if
        fork, and its ``task_forked`` event says what each changed.

        Args:
            checkpoint: the checkpoint to start from (from 1).
            step: the step to start at (from 1): the journal before its first
                operation is kept, as ``retry(from_step=...)`` keeps it.
            inputs: inputs to change in the new task (the others stay): what
                runs live after the fork point reads them. The inputs a task
                reads code from (an agent's spec) cannot be changed.
            model: the model (``provider:name``) of every call the new task
                makes live; the kept journal replays as recorded.
            instructions: a planning agent's instructions (the system prompt
                of each call it makes live); for a workflow's task, the task's
                instruction (``ctx.task.instruction``).
            tool_results: a result for a journaled tool call the fork keeps,
                by its seq: the new task replays it instead of the recorded one.

        Raises:
            CheckpointNotFound: the task has no such checkpoint.
            InputError: neither or both of `checkpoint` and `step`; the task
                reached no such step; `inputs`
                names an input the task reads code from; the model is not
                ``provider:name``; a seq in `tool_results` is not a tool call
                the fork keeps.
        """
        what_if = WhatIf(
            model=model, instructions=instructions, inputs=inputs or {}, tool_results=tool_results or {}
        )
        return await fork_task(
            self.store,
            task_id,
            checkpoint,
            step=step,
            what_if=what_if,
            max_instruction_bytes=self.max_instruction_bytes,
        )

    async def retry(self, task_id: str, *, from_step: int | None = None, queue: bool = True) -> str:
        """Start a new attempt of a failed or cancelled task, as a new task linked to it; return its id.

        The new task (``<id>-retry1``, then ``-retry2`` ...; its ``forked_from``
        names the original) gets the original's journal up to where the
        retry starts, so what succeeded before replays and runs no more, and
        runs live from there: an agent from the start of the step that
        failed, a workflow from the call that failed for good (or, if its
        code raised, over its whole journal), a cancelled task from where it
        was stopped. It keeps the original's workspace and budget, not its
        deadline. Run it with `resume`, or let a worker take it (`queue`).

        Args:
            from_step: start from the beginning of this step instead (from 1,
                up to the step the task stopped in).
            queue: put a start trigger for workers.

        Raises:
            TaskNotFound: no task has that id.
            CannotRetry: the task has not ended, or completed; `from_step` is
                not a step it reached.
        """
        return await retry_task(self.store, task_id, from_step=from_step, queue=queue)

    async def gc(self, *, keep: int | None = None, older_than: float | None = None) -> int:
        """Rotate checkpoints of every task; return how many were deleted (a task's newest stays)."""
        return await self.store.rotate_checkpoints(
            keep=keep, older_than=None if older_than is None else dt.timedelta(seconds=older_than)
        )
