"""A `RatchetAgent` run outside any workflow: a task of its own on the agent's store, run here.

`run_as_task` and `stream_as_task` make the task (the ``agent_run`` workflow,
named, not imported: it imports the agent's module) or take over an unfinished
one, and run it in this process. The workflow finds this process's own agent
object through `here_run`, and gives back its live result: an `AgentRunResult`,
or, for a streamed run, pydantic-ai's `StreamedRunResult` while the run is still
streaming, handed over through a `StreamReader`. A completed task's journal is
replayed for its result (`replayed`), calling nothing and writing nothing.

The run's ``deps`` are live objects of this process and never stored: the
task's inputs say only that it was given some (``given_deps``). A run here
uses them; a process that takes it over makes its own (`deps_for`).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import JsonValue
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.result import StreamedRunResult
from pydantic_ai.run import AgentRunResult

from ...engine.calls import WorkerStopping
from ...engine.context import Context
from ...engine.workflow import load_workflow
from ...errors import (
    AgentRunNotCompleted,
    CodeUnavailable,
    InputError,
    LeaseLost,
    NonDeterminismError,
    TaskNotFound,
)
from ...policy import Budget
from ...records import Lease, Task, TaskStatus, utcnow
from ...store import DEFAULT_STORE_URL, StateStore

if TYPE_CHECKING:
    from ...runtime import Runtime


class TaskAgent(Protocol):
    """What of a `RatchetAgent` (_agent.py, which imports this module) its task runs use."""

    name: str
    source: str
    store: str | StateStore | None
    budget: Budget | None
    deps_factory: Callable[[], Any] | None

    async def run_in(
        self, context: Context, user_prompt: str | None = None, **options: Any
    ) -> AgentRunResult[Any]: ...

    def run_stream_in(
        self, context: Context, user_prompt: str | None = None, **options: Any
    ) -> AbstractAsyncContextManager[StreamedRunResult[Any, Any]]: ...


__all__ = [
    "AGENT_RUN",
    "StreamReader",
    "TaskAgent",
    "deps_for",
    "here_run",
    "replaying_only",
    "run_as_task",
    "stream_as_task",
]

# The workflow of a run made outside any workflow (named, not imported: it imports the agent's module).
AGENT_RUN = "ratchet.integrations.pydantic_ai.workflow:agent_run"

# A lease token no store ever grants (tokens count claims from 1): a replay's writes are refused.
_NO_TOKEN = 2**62


class StreamReader:
    """Where a streamed run's workflow hands its `StreamedRunResult` to the code reading it here.

    The workflow keeps the run's stream open until the reader is `done`, then
    reads what is left itself and completes the task.
    """

    def __init__(self) -> None:
        self.handed: asyncio.Future[StreamedRunResult[Any, Any]] = asyncio.get_running_loop().create_future()
        self.done = asyncio.Event()

    def hand(self, streamed: StreamedRunResult[Any, Any]) -> None:
        """Give the reader the run's result (the workflow's side); a second run of it keeps the first."""
        if not self.handed.done():
            self.handed.set_result(streamed)


@dataclass
class _HereRun:
    """A run this process started: the agent object itself, and where its live result goes."""

    agent: TaskAgent
    deps: Any = None  # what the run was given here (never stored)
    results: list[AgentRunResult[Any]] = field(default_factory=list)
    reader: StreamReader | None = None  # a streamed run's


_HERE: ContextVar[_HereRun | None] = ContextVar("ratchet_pydantic_ai_run", default=None)
_REPLAY_ONLY: ContextVar[bool] = ContextVar("ratchet_pydantic_ai_replay_only", default=False)


def replaying_only() -> bool:
    """Whether the run starting here replays a completed task's journal whole (nothing runs live)."""
    return _REPLAY_ONLY.get()


def here_run(name: str) -> _HereRun | None:
    """The run of agent `name` this process started, if the workflow runs inside it."""
    here = _HERE.get()
    return here if here is not None and here.agent.name == name else None


def deps_for(agent: TaskAgent, task: Task) -> Callable[[], Any] | None:
    """How the run of `task` gets its deps here, before anything of it runs; None: it takes none.

    The deps it was given, if this process started it; else the agent's ``deps_factory``.

    Raises:
        CodeUnavailable: it was given deps elsewhere, and the agent has no ``deps_factory``
            (the task waits for its code).
    """
    here = here_run(agent.name)
    if here is not None and here.deps is not None:
        given = here.deps
        return lambda: given
    if agent.deps_factory is not None:
        return agent.deps_factory
    if task.inputs_params.get("given_deps"):
        raise CodeUnavailable(
            f"the run of agent {agent.name} was given deps by the process that started it, and this "
            f"process can't make them: give RatchetAgent(..., deps_factory=...) in {agent.source}"
        )
    return None


async def made(factory: Callable[[], Any] | None) -> Any:
    """The deps `factory` makes (awaited when it is async); None without one."""
    deps = factory() if factory is not None else None
    return await deps if inspect.isawaitable(deps) else deps


@contextmanager
def _here(agent: TaskAgent, deps: Any) -> Iterator[_HereRun]:
    here = _HereRun(agent=agent, deps=deps)
    token = _HERE.set(here)
    try:
        yield here
    finally:
        _HERE.reset(token)


def _inputs(
    agent: TaskAgent, prompt: str | None, history: Sequence[ModelMessage] | None, deps: Any
) -> dict[str, JsonValue]:
    inputs: dict[str, JsonValue] = {
        "agent": agent.name,
        "source": agent.source,
        "prompt": prompt,
        "message_history": ModelMessagesTypeAdapter.dump_python(list(history or ()), mode="json"),
    }
    if deps is not None:
        inputs["given_deps"] = True  # the deps themselves stay in this process
    return inputs


async def _existing(runtime: Runtime, agent: TaskAgent, task_id: str | None) -> Task | None:
    """The task `task_id` names, if there is one; it must be a run of `agent`."""
    if task_id is None:
        return None
    with suppress(TaskNotFound):
        task = await runtime.store.get_task(task_id)
        if task.inputs_params.get("agent") != agent.name:
            raise InputError(f"task {task.id} is not a run of agent {agent.name}")
        return task
    return None


def _store(agent: TaskAgent) -> str | StateStore:
    return agent.store or os.environ.get("RATCHET_STORE") or DEFAULT_STORE_URL


async def run_as_task(
    agent: TaskAgent,
    prompt: str | None,
    history: Sequence[ModelMessage] | None,
    task_id: str | None,
    deps: Any = None,
) -> AgentRunResult[Any]:
    """Run `agent` as a task of its own here (``RatchetAgent.run`` outside a workflow)."""
    from ...runtime import Runtime

    with _here(agent, deps) as here:
        async with Runtime(_store(agent)) as runtime:
            existing = await _existing(runtime, agent, task_id)
            if existing is None:
                inputs = _inputs(agent, prompt, history, deps)
                task = await runtime.run(
                    AGENT_RUN, inputs, name=agent.name, budget=agent.budget, task_id=task_id
                )
            else:
                task = await runtime.resume(existing.id)  # a completed one is returned as it is
            if task.status is TaskStatus.COMPLETED:
                # Run here: its live result. Run before, or by another process: its journal replayed.
                if here.results:
                    return here.results[-1]
                prompt, history = _asked(task)
                replay_deps = await made(deps_for(agent, task))
                with _replaying(task):
                    context = await _replay_context(runtime.store, task)
                    return await agent.run_in(context, prompt, message_history=history, deps=replay_deps)
    raise AgentRunNotCompleted(task=task)


@asynccontextmanager
async def stream_as_task(
    agent: TaskAgent,
    prompt: str | None,
    history: Sequence[ModelMessage] | None,
    task_id: str | None,
    deps: Any = None,
) -> AsyncIterator[StreamedRunResult[Any, Any]]:
    """Run `agent` as a task of its own here, streamed (``RatchetAgent.run_stream`` outside a workflow).

    The task's inputs say it streams, so a worker that resumes it runs the
    same ``run_stream`` (whose journal may end sooner than ``run``'s).
    """
    from ...runtime import Runtime

    with _here(agent, deps) as here:
        reader = here.reader = StreamReader()
        async with Runtime(_store(agent)) as runtime:
            existing = await _existing(runtime, agent, task_id)
            if existing is None:
                inputs = {**_inputs(agent, prompt, history, deps), "stream": True}
                running = runtime.run(
                    AGENT_RUN, inputs, name=agent.name, budget=agent.budget, task_id=task_id
                )
            elif existing.status is TaskStatus.COMPLETED:
                running = None
            else:
                running = runtime.resume(existing.id)
            task = existing
            if running is not None:
                runner = asyncio.ensure_future(running)
                first: set[asyncio.Future[Any]] = {runner, reader.handed}
                try:
                    await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
                except BaseException:
                    runner.cancel()  # this program stopped: the task stays unfinished, resumed later
                    raise
                if reader.handed.done():
                    try:
                        yield reader.handed.result()
                    except BaseException:
                        runner.cancel()  # left by an error: the task stays unfinished, resumed later
                        with suppress(asyncio.CancelledError):
                            await runner
                        raise
                    reader.done.set()  # the workflow reads the rest and completes the task
                    task = await runner
                    if task.status is not TaskStatus.COMPLETED:
                        raise AgentRunNotCompleted(task=task)
                    return
                task = await runner
            assert task is not None
            if task.status is not TaskStatus.COMPLETED:
                raise AgentRunNotCompleted(task=task)
            # Completed before (or by another process meanwhile): its journal replayed, streamed.
            prompt, history = _asked(task)
            replay_deps = await made(deps_for(agent, task))
            with _replaying(task):
                context = await _replay_context(runtime.store, task)
                async with agent.run_stream_in(
                    context, prompt, message_history=history, deps=replay_deps
                ) as streamed:
                    yield streamed


def _asked(task: Task) -> tuple[str | None, list[ModelMessage] | None]:
    """The prompt and message history the task's run was given."""
    inputs = task.inputs_params
    history = ModelMessagesTypeAdapter.validate_python(inputs.get("message_history") or [])
    return (None if inputs.get("prompt") is None else str(inputs["prompt"])), (history or None)


async def _replay_context(store: StateStore, task: Task) -> Context:
    """A context that replays the completed `task`'s journal: nothing runs again.

    It is stopping from the start, so a call the journal has no result for is
    never made (`WorkerStopping`), and its lease is one no store granted (a token
    past any real one), so nothing it might write is written.
    """
    stopped = asyncio.Event()
    stopped.set()
    lease = Lease(task_id=task.id, owner="replay", token=_NO_TOKEN, expires_at=utcnow())
    return Context(
        store=store,
        task=task,
        lease=lease,
        workflow=load_workflow(AGENT_RUN),
        recorded=await store.list_ops(task.id),
        steps=(),
        stopping=stopped,
    )


@contextmanager
def _replaying(task: Task) -> Iterator[None]:
    """A replay of the completed `task`, reporting no span; a call its journal lacks: AgentRunNotCompleted."""
    token = _REPLAY_ONLY.set(True)
    try:
        yield
    except (WorkerStopping, LeaseLost, NonDeterminismError) as error:
        why = "it asks for a call it did not make"
        if isinstance(error, NonDeterminismError):
            why = f"operation {error.seq} was {error.recorded!r}, not {error.requested!r}"
        raise AgentRunNotCompleted(
            f"task {task.id} completed, but its journal does not replay with this code "
            f"({why}); its result is in `ratchet show {task.id}`",
            task=task,
        ) from None
    finally:
        _REPLAY_ONLY.reset(token)
