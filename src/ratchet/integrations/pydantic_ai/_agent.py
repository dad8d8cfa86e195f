"""`RatchetAgent`: a pydantic-ai agent whose run is a Ratchet task.

Inside a workflow (``ctx`` is running), ``await ratchet_agent.run(prompt)``
runs the agent in that workflow's task: its model requests and tool calls
are the task's journaled operations, replayed when the workflow runs again
after a crash. Outside one, ``run`` makes a task of its own (the
``agent_run`` workflow) on the agent's store and runs it here; if this
process dies, ``ratchet resume TASK`` or any ``ratchet worker`` finishes it,
finding the agent again by its name in the module that defined it. A run
under the id of a completed task replays its journal for its result.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_ai.models import infer_model
from pydantic_ai.run import AgentRunResult
from pydantic_ai.toolsets import AbstractToolset

from ...engine.calls import WorkerStopping
from ...engine.context import Context
from ...engine.current import current_context
from ...engine.workflow import load_workflow
from ...errors import AgentRunNotCompleted, InputError, LeaseLost, NonDeterminismError, TaskNotFound
from ...policy import Budget
from ...records import Lease, Task, TaskStatus, utcnow
from ...store import DEFAULT_STORE_URL, StateStore
from ...trust.code import FILE_MODULE_PREFIX, portable_path
from ._model import RatchetModel
from ._toolset import RatchetToolset, in_tool_call

__all__ = ["AGENT_RUN", "RatchetAgent"]

# The workflow of a run made outside any workflow (named, not imported: it imports this module).
AGENT_RUN = "ratchet.integrations.pydantic_ai.workflow:agent_run"


@dataclass
class _HereRun:
    """A run this process started: the agent object itself, and where its live result goes."""

    agent: RatchetAgent
    results: list[AgentRunResult[Any]] = field(default_factory=list)


# A lease token no store ever grants (tokens count claims from 1): a replay's writes are refused.
_NO_TOKEN = 2**62


def _stopped() -> asyncio.Event:
    stopped = asyncio.Event()
    stopped.set()
    return stopped


_HERE: ContextVar[_HereRun | None] = ContextVar("ratchet_pydantic_ai_run", default=None)


class RatchetAgent:
    """A pydantic-ai `Agent` whose runs are durable Ratchet tasks.

    Define it at module level, under a name no other RatchetAgent of that
    module has: a worker that resumes a run imports the module and finds it
    by that name.

    Args:
        agent: the pydantic-ai agent; its model must be set (on the agent, or per run).
        name: the name of its runs and journal entries (default: the agent's ``name``).
        store: where a run outside a workflow keeps its task: a store URL or an
            open `StateStore` (default: ``RATCHET_STORE``, else ``sqlite:///./ratchet.db``).
        budget: the budget of the tasks its runs outside a workflow make.

    Raises:
        InputError: neither the agent nor `name` gives it a name.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        name: str | None = None,
        store: str | StateStore | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.wrapped = agent
        found = name or agent.name
        if not found:
            raise InputError(
                "a RatchetAgent needs a name that stays the same between runs, so a resumed "
                "run finds it: Agent(..., name='...') or RatchetAgent(agent, name='...')"
            )
        self.name: str = found
        self.store = store
        self.budget = budget
        self.source = _defining_module(sys._getframe(1).f_globals)

    def __repr__(self) -> str:
        return f"<RatchetAgent {self.name} of {self.source}>"

    async def run(
        self,
        user_prompt: str | None = None,
        *,
        message_history: Sequence[ModelMessage] | None = None,
        deps: Any = None,
        task_id: str | None = None,
        **options: Any,
    ) -> AgentRunResult[Any]:
        """Run the agent durably: in the running workflow's task, else as a task of its own.

        Args:
            user_prompt: what the agent is asked.
            message_history: earlier messages (a task of its own records them in its inputs).
            deps: the run's dependencies. A run outside a workflow takes none, since a
                worker that resumes it could not rebuild them; pass them in a workflow.
            task_id: outside a workflow, the id of the task: a new one is made under
                it; an unfinished one is resumed here; a completed one has its journal
                replayed for its result (nothing runs again).
            **options: inside a workflow, what ``Agent.run`` takes (``output_type``,
                ``model_settings``, ``usage_limits``, ``model`` ...).

        Inside a journaled tool's body (a tool of another RatchetAgent's run that
        delegates to this one, or any Ratchet tool), this is a plain ``Agent.run``:
        the calling tool's journal entry covers it.

        Returns:
            pydantic-ai's `AgentRunResult`.

        Raises:
            AgentRunNotCompleted: a task of its own did not complete (it failed, or
                waits on a person), or its journal does not replay; ``error.task`` tells.
            InputError: options a task of its own can't record.
        """
        if in_tool_call():
            # An agent a tool delegates to (a tool of another RatchetAgent's run, or any Ratchet
            # tool): the tool's journal entry covers the whole delegation
            # (its result is replayed, and its key passed on), as a run inside a Temporal
            # activity or a DBOS step is a plain run. Journaling its calls too would take seqs
            # that a replay of the tool, which does not run it, would not take.
            return await self.wrapped.run(user_prompt, message_history=message_history, deps=deps, **options)
        context = current_context()
        if context is not None:
            if task_id is not None:
                raise InputError("task_id is for a run outside a workflow; inside one the run is its task")
            return await self.run_in(
                context, user_prompt, message_history=message_history, deps=deps, **options
            )
        if options or deps is not None:
            given = ", ".join(sorted([*options, *(["deps"] if deps is not None else [])]))
            raise InputError(
                f"a RatchetAgent run outside a workflow takes a prompt, message_history and task_id, "
                f"not {given} (a worker that resumes it could not rebuild them); run it in a workflow"
            )
        return await self._run_as_task(user_prompt, message_history, task_id)

    def run_sync(self, user_prompt: str | None = None, **options: Any) -> AgentRunResult[Any]:
        """`run`, for code that is not async (outside a workflow only)."""
        return asyncio.run(self.run(user_prompt, **options))

    async def run_in(
        self,
        context: Context,
        user_prompt: str | None = None,
        *,
        toolsets: Sequence[AbstractToolset[Any]] | None = None,
        **options: Any,
    ) -> AgentRunResult[Any]:
        """Run the agent in the task of `context`: each model request and tool call journaled.

        Tool calls run one after the other, so each takes the same seq on every replay. The run's
        ``run_id`` and ``conversation_id`` (unless given, or the history has one) are made from the
        task's id and the run's place in it, the same on every replay.
        """
        model = options.pop("model", None) or self.wrapped.model
        if model is None:
            raise InputError(f"agent {self.name} has no model: give Agent(model=...) or run(model=...)")
        journaled = RatchetModel(infer_model(model), context=context, name=f"model:{self.name}")
        wrapped = [RatchetToolset(t, context=context) for t in [*self.wrapped.toolsets, *(toolsets or ())]]
        # pydantic-ai stamps a fresh UUID on each answer by default; ids made from the run's place
        # in the task are the same on every replay, so a replayed answer is the recorded one.
        place = f"{context.task_id}:{context.next_seq}"
        options.setdefault("run_id", f"run:{place}")
        history = options.get("message_history") or ()
        if not any(getattr(message, "conversation_id", None) for message in history):
            options.setdefault("conversation_id", f"conversation:{place}")
        with (
            self.wrapped.override(model=journaled, toolsets=wrapped, tools=[]),
            Agent.parallel_tool_call_execution_mode("sequential"),
        ):
            return await self.wrapped.run(user_prompt, **options)

    async def _run_as_task(
        self, user_prompt: str | None, history: Sequence[ModelMessage] | None, task_id: str | None
    ) -> AgentRunResult[Any]:
        from ...runtime import Runtime

        inputs: dict[str, JsonValue] = {
            "agent": self.name,
            "source": self.source,
            "prompt": user_prompt,
            "message_history": ModelMessagesTypeAdapter.dump_python(list(history or ()), mode="json"),
        }
        store = self.store or os.environ.get("RATCHET_STORE") or DEFAULT_STORE_URL
        with self._here() as here:
            async with Runtime(store) as runtime:
                existing = None
                if task_id is not None:
                    with suppress(TaskNotFound):
                        existing = await runtime.store.get_task(task_id)
                if existing is None:
                    task = await runtime.run(
                        AGENT_RUN, inputs, name=self.name, budget=self.budget, task_id=task_id
                    )
                elif existing.inputs_params.get("agent") != self.name:
                    raise InputError(f"task {existing.id} is not a run of agent {self.name}")
                else:
                    task = await runtime.resume(existing.id)  # a completed one is returned as it is
                if task.status is TaskStatus.COMPLETED:
                    # Run here: its live result. Run before, or by another process: its journal replayed.
                    return here.results[-1] if here.results else await self._replayed(runtime.store, task)
        raise AgentRunNotCompleted(task=task)

    async def _replayed(self, store: StateStore, task: Task) -> AgentRunResult[Any]:
        """The result of a completed run, rebuilt by replaying its journal: nothing runs again.

        Its context is stopping from the start, so a call the journal has no result for
        is never made (`WorkerStopping`), and its lease is one no store granted (a token
        past any real one), so nothing it might write is written.
        """
        lease = Lease(task_id=task.id, owner="replay", token=_NO_TOKEN, expires_at=utcnow())
        context = Context(
            store=store,
            task=task,
            lease=lease,
            workflow=load_workflow(AGENT_RUN),
            recorded=await store.list_ops(task.id),
            steps=(),
            stopping=_stopped(),
        )
        inputs = task.inputs_params
        history = ModelMessagesTypeAdapter.validate_python(inputs.get("message_history") or [])
        prompt = None if inputs.get("prompt") is None else str(inputs["prompt"])
        try:
            return await self.run_in(context, prompt, message_history=history or None)
        except (WorkerStopping, LeaseLost, NonDeterminismError) as error:
            why = "it asks for a call it did not make"
            if isinstance(error, NonDeterminismError):
                why = f"operation {error.seq} was {error.recorded!r}, not {error.requested!r}"
            raise AgentRunNotCompleted(
                f"task {task.id} completed, but its journal does not replay with this code "
                f"({why}); its result is in `ratchet show {task.id}`",
                task=task,
            ) from None

    @contextmanager
    def _here(self) -> Iterator[_HereRun]:
        here = _HereRun(agent=self)
        token = _HERE.set(here)
        try:
            yield here
        finally:
            _HERE.reset(token)


def here_run(name: str) -> _HereRun | None:
    """The run of agent `name` this process started, if the workflow runs inside it."""
    here = _HERE.get()
    return here if here is not None and here.agent.name == name else None


def _defining_module(namespace: dict[str, Any]) -> str:
    """Where a worker finds a RatchetAgent: its module's name, or its file when run as a script."""
    module = str(namespace.get("__name__", ""))
    path = namespace.get("__file__")
    if path and (module == "__main__" or module.startswith(FILE_MODULE_PREFIX)):
        return portable_path(path)
    return module
