"""`Agent`: what a task needs to rebuild its agent on any worker."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import Field

from ..engine.calls.compaction import DEFAULT_COMPACTION, Compaction, compaction_reference, load_compaction
from ..engine.task_spec import model_chain
from ..engine.workflow import load_module
from ..errors import InputError
from ..limits import MAX_TOOL_CALLS_PER_ANSWER
from ..policy import MAX_DURATION, Budget, CheckpointPolicy
from ..providers.scripted import portable_model
from ..providers.settings import ModelSettings, settings_from
from ..records import Constraints, Record, Task
from ..tools import Tool
from ..trust.code import FILE_MODULE_PREFIX, portable_path
from .mcp.servers import MCPServer, mcp_server

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "MAX_REPLANS",
    "Agent",
    "AgentSpec",
    "agent_middleware",
    "load_tools",
    "recorded_checkpoint_policy",
    "tool_source",
]

_DEFAULT: Any = object()  # `compaction` not given: the built-in one, with the agent's settings

BUILTIN_TOOL_NAMES = frozenset(
    {
        "list_files",
        "read_file",
        "write_file",
        "read_artifact",
        "read_state",
        "run_shell",
        "update_state",
        "ask_user",
        "replan",
        "skip_step",
        "complete_task",
        "session_history",
        "session_remember",
        "fail_task",
    }
)

MAX_REPLANS = 2
"""How many times a task's plan may be replaced, whatever asked for it (``AgentSpec.max_replans``)."""

ReplanTrigger = Literal["answers", "facts", "notes"]


class AgentSpec(Record):
    """The agent as a task records it (``task.inputs_params["agent"]``): plain data, no code."""

    name: str = "agent"
    instructions: str = ""
    tool_sources: list[str] = Field(default_factory=list)
    tool_names: list[str] | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    allow_shell: bool = False
    max_step_attempts: int = Field(default=2, ge=1)
    max_turns_per_step: int = Field(default=12, ge=1)
    history_token_budget: int = Field(default=6000, ge=200)
    keep_recent_messages: int = Field(default=6, ge=2)
    compaction: str | None = DEFAULT_COMPACTION
    max_tool_calls_per_answer: int = Field(default=MAX_TOOL_CALLS_PER_ANSWER, ge=1)
    max_replans: int = Field(default=MAX_REPLANS, ge=0)
    # What new information, arrived during a step, replans the steps after it (docs/agent.md).
    replan_on: tuple[ReplanTrigger, ...] = ("answers", "notes")
    # Validate before resume and step timeouts (docs/agent.md, "Checkpoints and step timeouts").
    checkpoint: CheckpointPolicy | None = None
    step_timeout: float | None = Field(default=None, gt=0, le=MAX_DURATION)
    # The session whose conversation and state carry over from task to task (agent/memory.py).
    session: str | None = Field(default=None, min_length=1, max_length=200)
    # The MCP servers whose tools the agent offers (docs/mcp.md, "Giving an agent MCP tools").
    mcp: list[MCPServer] = Field(default_factory=list)
    # How the model answers each of the agent's requests: temperature, ... (docs/agent.md, "Model settings").
    model_settings: ModelSettings | None = None


class Agent:
    """An agent: a model, its tools, its instructions, its constraints and budget.

    Args:
        name: a name for people.
        instructions: what the agent is and how it works, for every prompt.
        tools: `Tool` objects; each must live in an importable module or a
            ``.py`` file, so that any worker can load it again.
        model: ``provider:name``, e.g. ``openai:gpt-4o-mini`` or ``scripted:demo.json``
            (a script under the project root is recorded relative to it); or a
            fallback chain, a list of them (docs/providers.md, "Fallback chains").
        constraints: which risk levels need a person (docs/people.md).
        budget: the task's limits.
        fallback_on_pressure: once the task's budget is 80 % used, call the
            chain's next model (docs/limits.md).
        tool_sources: modules or ``.py`` files whose every tool the agent offers
            (a file under the project root is recorded relative to it).
        allow_shell: offer the built-in ``run_shell`` tool.
        compaction: what shortens the act requests' history: by default the
            built-in `Compaction` with ``history_token_budget`` and
            ``keep_recent_messages``; None for none; or your own object with
            ``async before_model(request, host)``, defined at the top level of
            a module or project file so every worker loads it (docs/agent.md).
        checkpoint: when the task's checkpoints are written (``strategy``),
            how many are kept (``keep``), and how old the newest may be for
            the task to resume by itself (``max_age``, seconds); default:
            after each step, all kept, no age limit.
        step_timeout: seconds one attempt at a step may take; past it the
            attempt fails like a failed check (retried, then replanned).
        session: a session id: the agent's tasks then share its conversation
            (earlier instructions and results, in the planner's and act
            prompts) and its state (``ctx.session`` in tools), as a
            LangGraph thread does (docs/agent.md, "Agents with memory").
        mcp: MCP servers whose tools the agent offers: ``"COMMAND ARGS"``
            (stdio), ``"http(s)://..."`` (streamable HTTP) or `MCPServer`
            specs (docs/mcp.md, "Giving an agent MCP tools").
        model_settings: how the model answers every request of the agent
            (`ModelSettings`, or its fields as a dict: ``temperature``,
            ``max_output_tokens``, ``seed``, ``reasoning_effort``); each
            provider sends them by its API's names and refuses one it cannot
            send (docs/providers.md, "Model settings").
        settings: other `AgentSpec` fields (``max_step_attempts``,
            ``max_turns_per_step``, ``history_token_budget``, ``keep_recent_messages``,
            ``max_tool_calls_per_answer``, ``max_replans``, ``replan_on``).
    """

    def __init__(
        self,
        name: str = "agent",
        instructions: str = "",
        tools: Iterable[Tool] = (),
        model: str | Sequence[str] | None = None,
        constraints: Constraints | None = None,
        budget: Budget | None = None,
        *,
        fallback_on_pressure: bool = False,
        tool_sources: Sequence[str] = (),
        allow_shell: bool = False,
        compaction: Any = _DEFAULT,
        checkpoint: CheckpointPolicy | None = None,
        step_timeout: float | None = None,
        session: str | None = None,
        mcp: Sequence[str | MCPServer] = (),
        model_settings: ModelSettings | dict[str, Any] | None = None,
        **settings: Any,
    ) -> None:
        self.tools = list(tools)
        taken = sorted(BUILTIN_TOOL_NAMES.intersection(t.name for t in self.tools))
        if taken:
            raise InputError(f"tool name {taken[0]!r} is a built-in tool's; give the tool another name")
        sources = [_portable(s) for s in tool_sources]
        sources = list(dict.fromkeys([*sources, *(tool_source(t) for t in self.tools)]))
        chain = [portable_model(m) for m in model_chain(model)]
        self.spec = AgentSpec(
            name=name,
            instructions=instructions,
            tool_sources=sources,
            # Given tools alone, the agent offers just those, not their modules' others.
            tool_names=None if tool_sources else [t.name for t in self.tools],
            constraints=constraints or Constraints(),
            allow_shell=allow_shell,
            checkpoint=checkpoint,
            step_timeout=step_timeout,
            session=session,
            mcp=_mcp_servers(mcp),
            model_settings=_model_settings(model_settings),
            **{**settings, **_compaction_settings(compaction)},
        )
        self.model = chain[0] if chain else None
        # The fallback chain after `model` (docs/providers.md, "Fallback chains").
        self.fallback_models = chain[1:]
        self.fallback_on_pressure = fallback_on_pressure
        self.budget = budget or Budget()

    @property
    def name(self) -> str:
        return self.spec.name


def _model_settings(given: ModelSettings | dict[str, Any] | None) -> ModelSettings | None:
    """The agent's model settings, a dict of them checked now (one line for a value out of range).

    Raises:
        InputError: a setting is unknown or out of its range.
    """
    if given is None or isinstance(given, ModelSettings):
        return given
    return settings_from(given)


def _mcp_servers(given: Sequence[str | MCPServer]) -> list[MCPServer]:
    """The MCP server specs, checked now; the SDK must be installed to use them.

    Raises:
        InputError: a spec is neither a command line nor an http(s) URL.
        MissingExtra: the ``mcp`` SDK is not installed.
    """
    servers = [mcp_server(spec) for spec in ([given] if isinstance(given, str) else given)]
    if servers:
        from .mcp.client import require_sdk

        require_sdk()
    return servers


def recorded_checkpoint_policy(task: Task) -> CheckpointPolicy | None:
    """The checkpoint policy an agent task recorded (``Agent(checkpoint=...)``), if it has one."""
    spec = task.inputs_params.get("agent")
    return AgentSpec.model_validate(spec).checkpoint if isinstance(spec, dict) else None


def tool_source(tool: Tool) -> str:
    """Where a worker finds a tool again: its module's name, or its file's path (see `_portable`).

    Raises:
        InputError: the tool is not a top-level name of its module, so no
            worker could load it again.
    """
    module = sys.modules.get(tool.fn.__module__)
    if module is None or not any(value is tool for value in vars(module).values()):
        raise InputError(
            f"tool {tool.name} is not defined at the top level of a module; a worker could not load it again"
        )
    file = getattr(module, "__file__", None)
    if module is None or (module.__name__ in ("__main__",) or module.__name__.startswith(FILE_MODULE_PREFIX)):
        if not file:
            raise InputError(f"tool {tool.name} lives in no file a worker could load")
        return portable_path(file)
    return module.__name__


def _portable(source: str) -> str:
    """A ``.py`` source relative to the project root when under it (absolute otherwise); modules as given.

    Relative, the task survives moving the project: a worker finds the file
    under its own project root.
    """
    return portable_path(source) if source.endswith(".py") else source


def load_tools(sources: Iterable[str]) -> list[Tool]:
    """Every `Tool` defined at the top level of each source (a module name or a .py file).

    Raises:
        CodeRefused: the code trust the run enforces does not admit a source.
        InputError: a source does not load, or two tools share a name.
    """
    found: dict[str, Tool] = {}
    for source in sources:
        module: Any = load_module(source)
        for value in vars(module).values():
            if isinstance(value, Tool):
                other = found.get(value.name)
                if other is not None and other is not value:
                    raise InputError(f"two tools are named {value.name!r} (one in {source})")
                found[value.name] = value
    return list(found.values())


def _compaction_settings(compaction: Any) -> dict[str, Any]:
    """The `AgentSpec` fields that record `compaction` (a built-in one by its settings)."""
    if compaction is _DEFAULT:
        return {}
    if type(compaction) is Compaction:  # recorded as the agent's own settings
        return {
            "compaction": DEFAULT_COMPACTION,
            "history_token_budget": compaction.token_budget,
            "keep_recent_messages": compaction.keep_recent,
        }
    return {"compaction": compaction_reference(compaction)}


def agent_middleware(task: Any) -> list[Any]:
    """The middleware an agent task's spec asks for: its compaction (none when it has None)."""
    spec = AgentSpec.model_validate(task.inputs_params.get("agent") or {})
    return load_compaction(
        spec.compaction, token_budget=spec.history_token_budget, keep_recent=spec.keep_recent_messages
    )
