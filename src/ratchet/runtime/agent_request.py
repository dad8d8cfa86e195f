"""An agent task a client asks for (MCP ``create_task``, HTTP ``POST /api/tasks``), checked and queued once.

Both servers build the agent here, so the same request is refused for the
same reason with the same words wherever it comes from. The tool sources a
client names are checked under the server's trust: a client names the files,
and must not make the server load any file it likes.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..agent import Agent
from ..agent.checked import check_tool_sources, checked_model
from ..errors import InputError
from ..limits import MAX_COUNT, PRIORITY_DEFAULT
from ..policy import Budget, positive_duration
from ..records import Constraints, HumanInTheLoop, RiskLevel, Task
from ..records.listing import search_words
from .runtime import Runtime

__all__ = ["DEFAULT_AGENT", "AgentRequest", "default_task_name", "submit_agent_task"]

DEFAULT_AGENT = "agent"  # the owner of a task asked for by a client acting as no agent (as `ratchet submit`)
DEFAULT_NAME_CHARS = 60


def default_task_name(instruction: str) -> str:
    """The name of an agent task asked for with none: the start of its instruction.

    Its first line that has words, spaces collapsed, at most `DEFAULT_NAME_CHARS`
    characters (cut after a word, with "…"); ``agent`` for an instruction
    with no letter or digit. So ``ratchet tasks`` tells tasks apart at a
    glance, and their ids read as what they do (``summarize-the-report-1f3a…``).
    """
    for line in instruction.splitlines():
        text = " ".join("".join(c if c.isprintable() else " " for c in line).split())
        if search_words(text):
            break
    else:
        return DEFAULT_AGENT
    if len(text) > DEFAULT_NAME_CHARS:
        start = text[: DEFAULT_NAME_CHARS - 1]
        cut = start.rsplit(" ", 1)[0] if " " in start else start
        text = cut.rstrip(" ,.;:-") + "…"
    return text


@dataclass(frozen=True)
class AgentRequest:
    """What a client asks for: an instruction and the agent to carry it out."""

    instruction: str
    name: str | None = None
    model: str | None = None  # None: the server's default model
    tools: Sequence[str] = ()
    instructions: str = ""
    inputs: dict[str, Any] | None = None
    labels: dict[str, str] | None = None
    priority: int = PRIORITY_DEFAULT
    max_steps: int | None = None
    max_tokens: int | None = None
    deadline: str | None = None  # a duration from now: 30m, 2h, 1d
    approval_for: list[RiskLevel] | None = None  # None: the default constraints
    at: dt.datetime | None = None
    queue: str | None = None  # a named queue (docs/rate-limits.md); None: no queue
    partition: str | None = None


async def submit_agent_task(
    runtime: Runtime, request: AgentRequest, *, owner: str = DEFAULT_AGENT, default_model: str | None = None
) -> Task:
    """Check `request`, then create its task queued for a worker; return the task.

    A request naming no model takes `default_model` (the server's ``--model``,
    its ``RATCHET_MODEL`` or its ratchet.toml's ``[model] default``), else
    ``RATCHET_MODEL`` of this process.

    Raises:
        InputError: the instruction is empty, the model is missing or unusable,
            a tool source is refused or does not load, `inputs` uses the key
            ``agent``, the deadline is not a duration, a number is out of range,
            the queue or partition is not a name (or a partition has no queue).
    """
    if not request.instruction.strip():
        raise InputError("instruction: say what the agent is to do")
    with runtime.trust.enforced():
        sources = check_tool_sources(list(request.tools), option="tools")
    agent = Agent(
        name=owner,  # a task belongs to the agent its spec names (Task.agent)
        instructions=request.instructions,
        model=checked_model(_model(request.model, default_model)),
        tool_sources=sources,
        budget=_budget(request.max_steps, request.max_tokens),
        constraints=None
        if request.approval_for is None
        else Constraints(human_in_the_loop=HumanInTheLoop(required_for_risk_levels=request.approval_for)),
    )
    if request.inputs is not None and "agent" in request.inputs:
        raise InputError("inputs: 'agent' is reserved for the agent's spec; use another key")
    at = request.at
    task_id = await runtime.submit(
        agent,
        request.inputs,
        name=request.name or default_task_name(request.instruction),
        labels=request.labels,
        instruction=request.instruction,
        deadline=positive_duration("deadline", request.deadline),
        priority=request.priority,
        at=None if at is None else (at.replace(tzinfo=dt.UTC) if at.tzinfo is None else at),
        queue=True if request.queue is None else request.queue,
        partition=request.partition,
    )
    return await runtime.store.get_task(task_id)


def _model(model: str | None, default_model: str | None) -> str:
    chosen = model if model is not None else default_model or os.environ.get("RATCHET_MODEL")
    if not chosen or not chosen.strip():
        raise InputError(
            "model: give provider:name (e.g. openai:gpt-4o-mini), or give the server a default model "
            "(--model, RATCHET_MODEL or [model] default in its ratchet.toml)"
        )
    return chosen


def _budget(max_steps: object, max_tokens: object) -> Budget:
    return Budget(
        max_steps=_count("max_steps", max_steps, "steps"),
        max_llm_tokens=_count("max_tokens", max_tokens, "tokens"),
    )


def _count(field: str, value: object, what: str) -> int | None:
    """A count a client gave, as JSON gave it: a whole number from 1 to `MAX_COUNT`, or None.

    Raises:
        InputError: anything else (a bool, a fraction, a string, a number out of range).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_COUNT:
        raise InputError(
            f"{field}: {_shown(value)} is not a number of {what}; give a whole number from 1 to {MAX_COUNT}"
        )
    return value


def _shown(value: object) -> str:
    if isinstance(value, int) and abs(value) >= 10**40:  # not worth printing whole (nor always printable)
        return "a number of more than 40 digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
