"""`RatchetAgent`: a pydantic-ai agent whose run is a Ratchet task.

Inside a workflow (``ctx`` is running), ``await ratchet_agent.run(prompt)``
runs the agent in that workflow's task: its model requests and tool calls
are the task's journaled operations, replayed when the workflow runs again
after a crash. Outside one, ``run`` makes a task of its own (the
``agent_run`` workflow) on the agent's store and runs it here; if this
process dies, ``ratchet resume TASK`` or any ``ratchet worker`` finishes it,
finding the agent again by its name in the module that defined it. A run
under the id of a completed task replays its journal for its result. Its
``deps`` stay in this process; elsewhere the agent's ``deps_factory`` makes them.
``run_stream`` is the same run streamed, and ``iter`` (inside a workflow only)
the same run driven node by node; _tasks.py runs the tasks of their own.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import infer_model
from pydantic_ai.models.instrumented import InstrumentedModel
from pydantic_ai.result import StreamedRunResult
from pydantic_ai.run import AgentRun, AgentRunResult
from pydantic_ai.toolsets import AbstractToolset

from ...engine.context import Context
from ...engine.current import current_context
from ...errors import InputError
from ...policy import Budget
from ...store import StateStore
from ...trust.code import FILE_MODULE_PREFIX, portable_path
from ._model import RatchetModel
from ._tasks import AGENT_RUN, replaying_only, run_as_task, stream_as_task
from ._toolset import RatchetToolset, in_tool_call
from ._tracing import traced_run

__all__ = ["AGENT_RUN", "RatchetAgent"]


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
        deps_factory: makes the agent's ``deps`` (called with nothing; may be async) for a run
            outside a workflow that is given none: in a worker or ``ratchet resume`` finishing
            a run another process started, or here. Without it, a run given ``deps`` in one
            process waits for its code (``waiting(code)``) when another process takes it over.

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
        deps_factory: Callable[[], Any] | None = None,
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
        self.deps_factory = deps_factory
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
            deps: the run's dependencies. Outside a workflow the task keeps them in this
                process only (they are not stored): a worker that takes the run over makes
                its own with the agent's ``deps_factory``; given none, the run here uses it too.
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
        _refuse_outside(options)
        return await run_as_task(self, user_prompt, message_history, task_id, deps)

    @asynccontextmanager
    async def run_stream(
        self,
        user_prompt: str | None = None,
        *,
        message_history: Sequence[ModelMessage] | None = None,
        deps: Any = None,
        task_id: str | None = None,
        **options: Any,
    ) -> AsyncIterator[StreamedRunResult[Any, Any]]:
        """`run`, streamed: ``async with agent.run_stream(prompt) as result``, as pydantic-ai's.

        It takes what `run` takes, in the same places, and gives pydantic-ai's own
        `StreamedRunResult` (``stream_text``, ``stream_output``, ``get_output``, ``usage``,
        ``new_messages`` ...). Each model request is one journaled call, its text handed over
        as the model writes it; a replayed one gives its journaled answer whole. Outside a
        workflow the run is a task of its own, as `run`'s is: leaving the block ends reading,
        not the run, which completes its task (or, left by an error, is resumed later as a
        killed run is); a completed task's journal is replayed for the result.

        Raises:
            AgentRunNotCompleted: a task of its own did not complete, or its journal does not replay.
            InputError: options a task of its own can't record.
        """
        if in_tool_call():  # as in run: the calling tool's journal entry covers it
            async with self.wrapped.run_stream(
                user_prompt, message_history=message_history, deps=deps, **options
            ) as streamed:
                yield streamed
            return
        context = current_context()
        if context is not None:
            if task_id is not None:
                raise InputError("task_id is for a run outside a workflow; inside one the run is its task")
            async with self.run_stream_in(
                context, user_prompt, message_history=message_history, deps=deps, **options
            ) as streamed:
                yield streamed
            return
        _refuse_outside(options)
        async with stream_as_task(self, user_prompt, message_history, task_id, deps) as streamed:
            yield streamed

    @asynccontextmanager
    async def iter(self, user_prompt: str | None = None, **options: Any) -> AsyncIterator[AgentRun[Any, Any]]:
        """pydantic-ai's ``Agent.iter``, in the running workflow's task: each request and tool call journaled.

        Only inside a workflow: the code that drives the run node by node is the
        workflow's, which runs again on resume; outside one, a worker resuming the run
        could not drive it.

        Raises:
            InputError: outside a workflow.
        """
        if in_tool_call():
            async with self.wrapped.iter(user_prompt, **options) as run:
                yield run
            return
        context = current_context()
        if context is None:
            raise InputError(
                "RatchetAgent.iter runs inside a workflow only (a worker resuming the run could not "
                "drive its nodes): call it from a workflow, or use run() or run_stream() here"
            )
        with self._journaling(context, None, options):
            async with self.wrapped.iter(user_prompt, **options) as run:
                yield run

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
        task's id and the run's place in it, the same on every replay. pydantic-ai's spans
        (when it is instrumented) nest under the span of the task or of its running step.
        """
        with self._journaling(context, toolsets, options):
            return await self.wrapped.run(user_prompt, **options)

    @asynccontextmanager
    async def run_stream_in(
        self,
        context: Context,
        user_prompt: str | None = None,
        *,
        toolsets: Sequence[AbstractToolset[Any]] | None = None,
        **options: Any,
    ) -> AsyncIterator[StreamedRunResult[Any, Any]]:
        """`run_in`, streamed: pydantic-ai's ``Agent.run_stream`` in the task of `context`."""
        with self._journaling(context, toolsets, options):
            async with self.wrapped.run_stream(user_prompt, **options) as streamed:
                yield streamed

    @contextmanager
    def _journaling(
        self, context: Context, toolsets: Sequence[AbstractToolset[Any]] | None, options: dict[str, Any]
    ) -> Iterator[None]:
        """The agent's model and toolsets journaled in the task of `context`, for one run given `options`."""
        model = options.pop("model", None) or self.wrapped.model
        if model is None:
            raise InputError(f"agent {self.name} has no model: give Agent(model=...) or run(model=...)")
        chosen = infer_model(model)
        if isinstance(chosen, InstrumentedModel):
            # pydantic-ai instruments a run whose model is an InstrumentedModel (Logfire's
            # instrument_pydantic_ai(model)); inside RatchetModel it would not see it: say so
            # with the capability it would use, and journal the model it wraps.
            settings = Instrumentation(settings=chosen.instrumentation_settings)
            options["capabilities"] = [*(options.get("capabilities") or ()), settings]
            chosen = chosen.wrapped
        journaled = RatchetModel(chosen, context=context, name=f"model:{self.name}")
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
            traced_run(context, replay_only=replaying_only()),
        ):
            yield


def _refuse_outside(options: dict[str, Any]) -> None:
    """A run outside a workflow records only what a worker can rebuild: refuse the rest."""
    if options:
        raise InputError(
            f"a RatchetAgent run outside a workflow takes a prompt, message_history, deps and task_id, "
            f"not {', '.join(sorted(options))} (a worker that resumes it could not rebuild them); "
            "run it in a workflow"
        )


def _defining_module(namespace: dict[str, Any]) -> str:
    """Where a worker finds a RatchetAgent: its module's name, or its file when run as a script."""
    module = str(namespace.get("__name__", ""))
    path = namespace.get("__file__")
    if path and (module == "__main__" or module.startswith(FILE_MODULE_PREFIX)):
        return portable_path(path)
    return module
