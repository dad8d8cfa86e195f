"""`ThreadTasks`: each thread a `RatchetSaver` writes is a Ratchet task (docs/integrations.md).

The saver tells this module what it writes on a thread's root namespace, and
the thread's task (``langgraph:<thread id>``, made on its first checkpoint)
follows:

- a checkpoint with something to run next: ``running``, the saver holding
  the task's lease (`ThreadFence.hold`) so that no worker takes the thread
  up from a live program;
- a checkpoint with nothing next: ``completed`` (its result names the thread
  and the checkpoint, not the state, which stays in the thread);
- an interrupt (a pending write on ``__interrupt__``): ``waiting(input)``,
  each `interrupt()` a question (a journal operation of kind ``question``,
  as ``ctx.ask_user`` records), which ``ratchet answer`` answers;
- a node's error (``__error__``): ``failed``;
- a resume by the program itself (``Command(resume=...)``, a write on
  ``__resume__``), or a new input: ``running`` again, its open questions
  marked answered there;
- the saver closed while the thread runs (``stop``): its program stopped the
  run (a static breakpoint, the recursion limit, Ctrl-C): ``waiting(input)``,
  its question saying what is next. A program that dies does not close its
  saver: its lease expires, and a worker takes the thread up.

With LangGraph's ``"async"`` durability a step's checkpoint may be stored
after the writes that follow it (an interrupt): what was stored on a
checkpoint no newer than the one the task's status was last decided on is
old news, and changes nothing (LangGraph's checkpoint ids sort in the order
they are made).

"Something next" is read from the checkpoint's channels: a node's trigger
(``branch:to:NODE``, a ``join:`` of several sources, the input on
``__start__``) or a ``Send`` (``__pregel_tasks``) holds a value until the
node it triggers has run. A task that ended stays ended (a Ratchet task never
moves again): a later run on the thread adds checkpoints to its steps.

Only what changes is written: the saver remembers the status it last wrote
for each thread, so a run costs a few small transactions, not one a step.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from ...errors import TaskNotFound
from ...records import Event, Operation, OpKind, OpStatus, Severity, Task, TaskStatus, WaitReason, utcnow
from ...records.langgraph_thread import THREAD_WORKFLOW, thread_task_id
from ...store import StateStore, StoreOps
from ._fence import ThreadFence

__all__ = [
    "ERROR",
    "INTERRUPT",
    "RESUME",
    "ThreadTasks",
    "has_next",
    "next_nodes",
    "record_interrupts",
    "stopped_question",
]

# LangGraph's special channels (langgraph.checkpoint.base.WRITES_IDX_MAP names them by their index).
ERROR = "__error__"
INTERRUPT = "__interrupt__"
RESUME = "__resume__"

_TRIGGERS = ("branch:to:", "join:")
_STARTS = ("__start__", "__pregel_tasks")


def has_next(channels: Iterable[str]) -> bool:
    """Whether a checkpoint with values on these channels has a node to run next."""
    return any(channel in _STARTS or channel.startswith(_TRIGGERS) for channel in channels)


def next_nodes(channels: Iterable[str]) -> list[str]:
    """The nodes a checkpoint's triggers name (``branch:to:NODE``)."""
    return sorted(
        channel.removeprefix("branch:to:") for channel in channels if channel.startswith("branch:to:")
    )


def stopped_question(nodes: Sequence[str]) -> str:
    """The question of a thread whose run stopped with `nodes` next and no interrupt."""
    what = ", ".join(nodes) or "a step"
    return f"the run stopped before {what} (a breakpoint, or its program stopped it): answer to run it on"


def question_of(value: Any) -> str:
    """An interrupt's value as the question people read: its text, or its ``question``, or its JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("question"), str):
        return str(value["question"])
    return json.dumps(to_jsonable_python(value, fallback=repr), ensure_ascii=False)


async def record_interrupts(
    tx: StoreOps, task_id: str, interrupts: Sequence[tuple[str, Any]], *, unanswerable: str | None
) -> list[Operation]:
    """Record each interrupt ``(id, value)`` no open question has yet as a question of the task.

    `unanswerable`, when set, is why a person's answer cannot resume the
    thread: ``ratchet answer`` refuses with it, and stores nothing.
    """
    ops = await tx.list_ops(task_id)
    newest = newest_questions(ops)
    seq = max((op.seq for op in ops), default=-1) + 1
    recorded = []
    for interrupt_id, value in interrupts:
        meta: dict[str, Any] = {"interrupt_id": interrupt_id}
        if unanswerable is not None:
            meta["unanswerable"] = unanswerable
        open_one = newest.get(interrupt_id)
        if open_one is not None and open_one.status is OpStatus.STARTED:
            # Asked already (the program ran the thread again without resuming it): only whether
            # it can be answered changes, once a saver names the graph.
            if open_one.meta.get("unanswerable") != unanswerable:
                await tx.record_op_started(open_one.model_copy(update={"meta": meta}))
            continue
        op = Operation(
            task_id=task_id,
            seq=seq,
            kind=OpKind.QUESTION,
            name="interrupt",
            idempotency_key=f"{task_id}:interrupt:{seq}",
            status=OpStatus.STARTED,
            input={"question": question_of(value), "interrupt": to_jsonable_python(value, fallback=repr)},
            meta=meta,
        )
        recorded.append(await tx.record_op_started(op))
        seq += 1
    return recorded


def newest_questions(ops: Iterable[Operation]) -> dict[str, Operation]:
    """The newest question of each interrupt id among a task's operations (one node may ask twice)."""
    found: dict[str, Operation] = {}
    for op in ops:
        interrupt_id = op.meta.get("interrupt_id") if op.kind is OpKind.QUESTION else None
        if isinstance(interrupt_id, str):
            found[interrupt_id] = op  # list_ops gives them by seq
    return found


def cannot_resume(thread_id: str) -> str:
    """Why an interrupt of a thread whose saver named no graph cannot be answered in Ratchet."""
    return (
        f"LangGraph thread {thread_id!r} was written by a RatchetSaver that named no graph, so Ratchet "
        "cannot resume it: open the saver with graph='module:attribute' (the StateGraph or compiled "
        "graph a worker imports), or resume it in its program with Command(resume=...)"
    )


class ThreadTasks:
    """The task of each thread one saver writes, kept in step with the thread."""

    def __init__(self, store: StateStore, fence: ThreadFence, graph: str | None, *, fenced: bool) -> None:
        self.store = store
        self.fence = fence
        self.graph = graph
        self.fenced = fenced  # a fenced saver keeps its leases until it is released
        self._status: dict[str, TaskStatus] = {}  # what this saver last wrote (or found) per thread
        self._basis: dict[str, str] = {}  # the checkpoint each thread's status was last decided on
        self._next: dict[str, list[str]] = {}  # the nodes its latest checkpoint runs next
        # LangGraph stores a step's checkpoint and writes from several threads at once: one move at a time.
        self._moving = asyncio.Lock()

    async def checkpoint(self, thread_id: str, checkpoint_id: str, channels: Collection[str]) -> None:
        """Checkpoint `checkpoint_id` of the thread's root graph was stored, with values on `channels`."""
        status = TaskStatus.RUNNING if has_next(channels) else TaskStatus.COMPLETED
        if self._newer(thread_id, checkpoint_id, strictly=True):
            self._next[thread_id] = next_nodes(channels)
        if self._status.get(thread_id) is status and self._newer(thread_id, checkpoint_id, strictly=True):
            self._basis[thread_id] = checkpoint_id
            if status is TaskStatus.RUNNING:
                await self.fence.hold(thread_id)  # renewed past half its life
            return
        await self._move(thread_id, status, checkpoint_id, strictly=True)

    async def writes(self, thread_id: str, checkpoint_id: str, writes: Sequence[tuple[str, Any]]) -> None:
        """Pending writes on checkpoint `checkpoint_id` of the thread's root graph were stored."""
        for channel, value in writes:
            if channel == INTERRUPT:
                found = [(str(i.id), i.value) for i in value if hasattr(i, "id")]
                await self._move(thread_id, TaskStatus.WAITING, checkpoint_id, interrupts=found)
            elif channel == ERROR:
                error = f"{type(value).__name__}: {value}"
                await self._move(thread_id, TaskStatus.FAILED, checkpoint_id, error=error)
            elif channel == RESUME and self._status.get(thread_id) is not TaskStatus.RUNNING:
                await self._move(thread_id, TaskStatus.RUNNING, checkpoint_id)

    async def stop(self) -> None:
        """The saver is closing: a thread it still runs was stopped by its program (a breakpoint,
        ``interrupt_before``, the recursion limit, Ctrl-C), not by a crash. It waits for input, its
        question saying what is next, so that no worker runs it on before a person says so."""
        for thread_id, status in list(self._status.items()):
            if status is TaskStatus.RUNNING:
                basis = self._basis.get(thread_id, "")
                asked = (f"stopped:{basis}", stopped_question(self._next.get(thread_id, [])))
                async with self._moving:
                    await self._move_alone(thread_id, TaskStatus.WAITING, interrupts=[asked])

    def forget(self, thread_id: str) -> None:
        self._status.pop(thread_id, None)
        self._basis.pop(thread_id, None)
        self._next.pop(thread_id, None)

    def _newer(self, thread_id: str, checkpoint_id: str, *, strictly: bool) -> bool:
        """Whether what was stored on `checkpoint_id` is news to the task: LangGraph's ids sort in the
        order checkpoints are made, and a write on a checkpoint comes after it (but a checkpoint that
        is no newer than the one a write the task followed was on is older news)."""
        basis = self._basis.get(thread_id)
        return basis is None or checkpoint_id > basis or (not strictly and checkpoint_id == basis)

    async def _move(
        self,
        thread_id: str,
        status: TaskStatus,
        checkpoint_id: str,
        *,
        strictly: bool = False,
        interrupts: Sequence[tuple[str, Any]] = (),
        error: str | None = None,
    ) -> None:
        async with self._moving:
            if not self._newer(thread_id, checkpoint_id, strictly=strictly):
                return  # stored after what the task follows already (LangGraph's "async" durability)
            self._basis[thread_id] = checkpoint_id
            await self._move_alone(thread_id, status, interrupts=interrupts, error=error)

    async def _move_alone(
        self,
        thread_id: str,
        status: TaskStatus,
        *,
        interrupts: Sequence[tuple[str, Any]] = (),
        error: str | None = None,
    ) -> None:
        if status is TaskStatus.RUNNING:
            await self.fence.hold(thread_id)  # before the task can be claimed as running
        task_id = thread_task_id(thread_id)
        async with self.store.transaction() as tx:
            task = await _find(tx, task_id)
            if task is None:
                task = await tx.create_task(self._new_task(thread_id))
                await _say(tx, task_id, "langgraph_thread", f"LangGraph thread {thread_id!r} started")
            if not task.status.is_terminal:
                task = await self._name_graph(tx, task)
            if task.status.is_terminal:
                status = task.status  # an ended task never moves again
            elif status is TaskStatus.RUNNING:
                await self._running(tx, task)
            elif status is TaskStatus.WAITING:
                named = isinstance(task.inputs_params.get("graph"), str)  # by this saver or an earlier one
                unanswerable = None if named else cannot_resume(thread_id)
                asked = await record_interrupts(tx, task_id, interrupts, unanswerable=unanswerable)
                await tx.update_task(task.transition(TaskStatus.WAITING, waiting_on=WaitReason.INPUT))
                for op in asked:
                    text = f"the graph asks: {op.input['question']} (`ratchet answer {task_id} TEXT`)"
                    await _say(tx, task_id, "waiting", text, {"reason": "input", "seq": op.seq})
            else:
                if task.status is not TaskStatus.RUNNING:  # it ended after a resume this saver did not see
                    await self._running(tx, task)
                    task = await tx.get_task(task_id)
                if status is TaskStatus.COMPLETED:
                    done = task.transition(TaskStatus.COMPLETED, result={"thread_id": thread_id})
                    await tx.update_task(done)
                    await _say(tx, task_id, "completed", f"LangGraph thread {thread_id!r} has nothing next")
                else:
                    await tx.update_task(task.transition(TaskStatus.FAILED, error=error))
                    await _say(tx, task_id, "failed", f"a node failed: {error}", severity=Severity.ERROR)
        self._status[thread_id] = status
        if status is not TaskStatus.RUNNING and not self.fenced:
            await self.fence.let_go(thread_id)

    async def _name_graph(self, tx: StoreOps, task: Task) -> Task:
        """The task with this saver's graph as its input, sealed again, if it named none or another
        (a thread begun by a saver without one, or imported): the program that writes the thread
        names the code that runs it."""
        if self.graph is None or task.inputs_params.get("graph") == self.graph:
            return task
        from ...trust.seal import SigningKey

        inputs = {**task.inputs_params, "graph": self.graph}
        named = task.model_copy(update={"inputs_params": inputs, "name": self.graph})
        return await tx.update_task(SigningKey.from_environment().seal(named, ("graph",)))

    async def _running(self, tx: StoreOps, task: Task) -> None:
        if task.status is TaskStatus.RUNNING:
            return
        if task.status is TaskStatus.WAITING:  # the program resumed it itself, or ran it on
            for op in newest_questions(await tx.list_ops(task.id)).values():
                if op.status is OpStatus.STARTED:
                    answered = {"status": OpStatus.SUCCEEDED, "finished_at": utcnow()}
                    meta = {**op.meta, "answered_by": "the program"}
                    await tx.record_op_finished(op.model_copy(update={**answered, "meta": meta}))
            await tx.delete_triggers(task.id)  # a wake-up for a worker no longer applies
            await _say(tx, task.id, "resumed", "the program runs the thread again")
        started = task.started_at or utcnow()
        await tx.update_task(task.transition(TaskStatus.RUNNING, started_at=started))

    def _new_task(self, thread_id: str) -> Task:
        from ...engine.task_spec import new_task

        inputs: dict[str, Any] = {"thread_id": thread_id}
        if self.graph is not None:
            inputs["graph"] = self.graph
        made = new_task(
            THREAD_WORKFLOW, inputs, task_id=thread_task_id(thread_id), name=self.graph or "langgraph"
        )
        return made.model_copy(update={"status": TaskStatus.RUNNING, "started_at": utcnow()})


async def _find(tx: StoreOps, task_id: str) -> Task | None:
    try:
        return await tx.get_task(task_id)
    except TaskNotFound:
        return None


async def _say(
    tx: StoreOps,
    task_id: str,
    kind: str,
    message: str,
    data: dict[str, Any] | None = None,
    *,
    severity: Severity = Severity.INFO,
) -> None:
    await tx.append_event(
        Event(
            task_id=task_id,
            kind=kind,
            message=message,
            display_message=message,
            data=data or {},
            severity=severity,
        )
    )
