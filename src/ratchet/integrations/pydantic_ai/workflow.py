"""The workflow of a `RatchetAgent` run made outside any workflow: one agent run, as a task.

Its inputs name the agent (its name, and the module or file that defines it)
and the run's prompt and message history. A worker resuming the task imports
that module (as its code trust allows) and takes the `RatchetAgent` of that
name from it; the process that started the run uses its own object, and the
deps it was given. A worker makes the deps with the agent's ``deps_factory``;
a run given deps whose agent has none waits for its code (`deps_for`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import JsonValue
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter
from pydantic_core import to_jsonable_python

from ...engine.context import Context
from ...engine.workflow import Workflow, load_module
from ...errors import WorkflowNotFound
from ...records import Task
from ...tools import Tool
from ._agent import RatchetAgent
from ._tasks import TaskAgent, deps_for, here_run, made

__all__ = ["agent_run", "find_agent"]


def find_agent(source: str, name: str) -> RatchetAgent:
    """The `RatchetAgent` named `name` among the module-level names of `source`.

    Raises:
        CodeRefused: the run's code trust does not admit `source`.
        WorkflowNotFound: `source` does not load, or defines no such agent.
    """
    module = load_module(source)
    for value in vars(module).values():
        if isinstance(value, RatchetAgent) and value.name == name:
            return value
    raise WorkflowNotFound(f"{source} defines no RatchetAgent named {name!r} at module level")


def _agent_of(task: Task) -> TaskAgent:
    """The agent of `task`: this process's own object if it started the run, else found by name."""
    name, source = str(task.inputs_params.get("agent")), str(task.inputs_params.get("source"))
    here = here_run(name)
    return here.agent if here is not None else find_agent(source, name)


def _agent_loads(task: Task, store: object) -> list[Tool]:
    # Called before the run writes anything: an agent that can't be found here, or whose deps
    # can't be made here, makes the task wait for its code (`waiting(code)`), as a missing
    # workflow does, instead of failing it.
    deps_for(_agent_of(task), task)
    return []


def _checking_its_agent(fn: Callable[..., Awaitable[JsonValue]]) -> Workflow:
    return Workflow(fn, name="pydantic-ai agent run", tools_for=_agent_loads, code_inputs=("agent", "source"))


@_checking_its_agent
async def agent_run(
    ctx: Context,
    agent: str,
    source: str,
    prompt: str | None = None,
    message_history: Any = None,
    stream: bool = False,
    given_deps: bool = False,
) -> JsonValue:
    """Run the agent on the prompt in this task; its output and new messages are the task's result.

    A streamed run (`stream`) is ``run_stream``'s: the code that started it here
    reads it while it streams; a worker that resumes it reads it to the end itself.
    `given_deps`: the process that started it gave it deps (kept there, not here).
    """
    here = here_run(agent)
    found = _agent_of(ctx.task)
    history = ModelMessagesTypeAdapter.validate_python(message_history or []) or None
    deps = await made(deps_for(found, ctx.task))
    if stream:
        async with found.run_stream_in(ctx, prompt, message_history=history, deps=deps) as streamed:
            if here is not None and here.reader is not None:
                here.reader.hand(streamed)
                await here.reader.done.wait()
            output = await streamed.get_output()  # what the reader left unread, read here
        return _result(output, streamed.new_messages())
    result = await found.run_in(ctx, prompt, message_history=history, deps=deps)
    if here is not None:
        here.results.append(result)
    return _result(result.output, result.new_messages())


def _result(output: Any, new_messages: list[ModelMessage]) -> JsonValue:
    return {
        "output": to_jsonable_python(output),
        "new_messages": ModelMessagesTypeAdapter.dump_python(new_messages, mode="json"),
    }
