"""The agent that `ratchet run` and `ratchet submit` build from their options, checked first.

Each option is checked here, now, rather than when the task runs: a bad
model spec or tools file is one line of bad input (exit 2), and nothing is
stored.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..agent import Agent
from ..agent.checked import check_tool_sources, checked_model
from ..agent.mcp.servers import MCPServer
from ..engine.task_spec import model_chain
from ..errors import InputError
from ..limits import MAX_TOOL_CALLS_PER_ANSWER
from ..policy import Budget, CheckpointPolicy, CheckpointStrategy, positive_duration
from ..providers.settings import ModelSettings, settings_from
from .resume import make_cwd_importable

__all__ = [
    "AGENT_NAME",
    "build_agent",
    "checked_tool_sources",
    "checkpoint_policy",
    "deadline_seconds",
    "duration_seconds",
    "model_settings",
]

AGENT_NAME = "agent"


def build_agent(
    *,
    model: str | Sequence[str],
    fallback_on_pressure: bool = False,
    tool_files: list[str],
    instructions: str = "",
    max_steps: int | None = None,
    max_tokens: int | None = None,
    max_cost: float | None = None,
    max_tool_calls: int = MAX_TOOL_CALLS_PER_ANSWER,
    allow_shell: bool = False,
    checkpoint: CheckpointPolicy | None = None,
    step_timeout: float | None = None,
    session: str | None = None,
    mcp: list[MCPServer] | None = None,
    model_settings: ModelSettings | None = None,
) -> Agent:
    """The agent the options describe, each checked now rather than when the task runs.

    A tools file under the project root (the current directory) is recorded
    by its path relative to it, so the task survives moving the project; a
    module by its name.

    Raises:
        InputError: the model spec names no usable model, its provider
            cannot send one of the model settings, or a tools file or module
            is missing, does not load, defines no tool, or reuses a tool's name.
    """
    sources = checked_tool_sources(tool_files)
    return Agent(
        name=AGENT_NAME,
        instructions=instructions,
        model=[checked_model(one, settings=model_settings) for one in model_chain(model)],
        fallback_on_pressure=fallback_on_pressure,
        model_settings=model_settings,
        budget=Budget(max_steps=max_steps, max_llm_tokens=max_tokens, max_cost=max_cost),
        tool_sources=sources,
        allow_shell=allow_shell,
        max_tool_calls_per_answer=max_tool_calls,
        checkpoint=checkpoint,
        step_timeout=step_timeout,
        session=_checked_session(session),
        mcp=mcp or [],
    )


_SETTING_OPTIONS = {
    "temperature": "--temperature",
    "max_output_tokens": "--max-output-tokens",
    "seed": "--seed",
    "reasoning_effort": "--reasoning-effort",
}


def model_settings(**given: object) -> ModelSettings | None:
    """The model settings the options give (None when they give none), each in its range.

    Raises:
        InputError: a value is out of its range, in one line naming its option.
    """
    return settings_from(given, spelled=_SETTING_OPTIONS)


def _checked_session(session: str | None) -> str | None:
    if session is not None and not session.strip():
        raise InputError("--session needs a session id, e.g. --session architect")
    return session


def checked_tool_sources(tool_files: list[str]) -> list[str]:
    """The ``--tools`` values checked, as a task records them (see `build_agent`).

    Raises:
        InputError: a tools file or module is missing, does not load,
            defines no tool, or reuses a tool's name.
    """
    make_cwd_importable()  # --tools may name a module of the project
    return check_tool_sources(tool_files, option="--tools")


def deadline_seconds(text: str | None) -> float | None:
    """The seconds ``--deadline`` gives, or None without it.

    Raises:
        InputError: `text` is not a duration, or leaves no time.
    """
    return duration_seconds("--deadline", text)


def duration_seconds(option: str, text: str | None) -> float | None:
    """The seconds a duration option (`option`) gives, or None without it (see `positive_duration`)."""
    return positive_duration(option, text)


def checkpoint_policy(
    strategy: CheckpointStrategy | None, keep: int | None, max_age: str | None
) -> CheckpointPolicy | None:
    """The checkpoint policy ``--checkpoint-strategy``, ``--keep-checkpoints`` and
    ``--checkpoint-max-age`` give; None when none is given (the agent's default then holds).

    Raises:
        InputError: the maximum age is not a duration.
    """
    if strategy is None and keep is None and max_age is None:
        return None
    return CheckpointPolicy(
        strategy=strategy or CheckpointStrategy.EVERY_STEP,
        keep=keep,
        max_age=duration_seconds("--checkpoint-max-age", max_age),
    )
