"""The options of `ratchet run` and `ratchet submit` that describe the agent and its task, declared once.

`AgentOptions` holds them; `with_agent_options` gives a command their
parameters. Typer reads a command's options from the parameters of its
function and cannot take a group of them from one object (typer issue #153),
so the decorator puts the bundle's fields in front of the command's own
parameters, in the order they are declared here, and hands the command one
`AgentOptions` made of them. Both commands therefore take, spell, document
and check these options the same way, and build their agent in one call.

Making the bundle checks nothing: each command reads the instruction, builds
the agent and reads the deadline at the points it chooses, so its own checks
keep their place among these (which bad option a command names first).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, Concatenate, TypeVar

from ..agent import Agent
from ..limits import MAX_INSTRUCTION_BYTES, MAX_TOOL_CALLS_PER_ANSWER, check_name
from ..runtime.agent_request import default_task_name
from ..trust.code import CodeTrust
from ..views.task_filter import parse_labels
from .agent_spec import (
    build_agent,
    checkpoint_policy,
    deadline_seconds,
    duration_seconds,
    model_settings,
)
from .instruction import read_instruction
from .mcp_servers import checked_mcp_servers
from .options import (
    AllowShellOption,
    CheckpointMaxAgeOption,
    CheckpointStrategyOption,
    DeadlineOption,
    FallbackOnPressureOption,
    InstructionArgument,
    InstructionsOption,
    KeepCheckpointsOption,
    LabelOption,
    MaxCostOption,
    MaxInstructionBytesOption,
    MaxOutputTokensOption,
    MaxStepsOption,
    MaxTokensOption,
    MaxToolCallsOption,
    McpOption,
    McpRiskOption,
    ModelOption,
    ReasoningEffortOption,
    SeedOption,
    SessionOption,
    StepTimeoutOption,
    TaskNameOption,
    TemperatureOption,
    ToolsOption,
)

__all__ = ["AgentOptions", "with_agent_options"]

R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class AgentOptions:
    """The agent's options and its task's, as the command line gave them; each method checks its part."""

    instruction: InstructionArgument
    model: ModelOption
    name: TaskNameOption = None
    label: LabelOption = None
    tools: ToolsOption = None
    instructions: InstructionsOption = ""
    deadline: DeadlineOption = None
    max_steps: MaxStepsOption = None
    max_tokens: MaxTokensOption = None
    max_cost: MaxCostOption = None
    max_tool_calls: MaxToolCallsOption = MAX_TOOL_CALLS_PER_ANSWER
    temperature: TemperatureOption = None
    max_output_tokens: MaxOutputTokensOption = None
    seed: SeedOption = None
    reasoning_effort: ReasoningEffortOption = None
    allow_shell: AllowShellOption = False
    checkpoint_strategy: CheckpointStrategyOption = None
    keep_checkpoints: KeepCheckpointsOption = None
    checkpoint_max_age: CheckpointMaxAgeOption = None
    step_timeout: StepTimeoutOption = None
    session: SessionOption = None
    mcp: McpOption = None
    mcp_risk: McpRiskOption = None
    max_instruction_bytes: MaxInstructionBytesOption = MAX_INSTRUCTION_BYTES
    fallback_on_pressure: FallbackOnPressureOption = False

    def read_instruction(self) -> str:
        """The instruction (standard input for ``-``), at most ``--max-instruction-bytes`` long.

        Raises:
            InputError: it is empty, too large, or not UTF-8 text.
        """
        return read_instruction(self.instruction, limit=self.max_instruction_bytes)

    def task_name(self, instruction: str) -> str:
        """The task's name: ``--name``, or the start of `instruction` without it (`default_task_name`).

        Raises:
            InputError: it is blank, too long, or not text a store keeps.
        """
        if self.name is None:
            return default_task_name(instruction)
        check_name(self.name, "--name")
        return self.name

    def labels(self) -> dict[str, str]:
        """The task's labels, from each ``--label KEY=VALUE``.

        Raises:
            InputError: one is not KEY=VALUE, repeats a key, or is no label (`check_labels`).
        """
        return parse_labels("--label", self.label or ())

    def agent(self, *, trust: CodeTrust | None) -> Agent:
        """The agent these options describe, each checked now (see `build_agent`).

        `trust` is the code trust of the process that will run the task, which
        must admit each ``--mcp`` command; None where that is another process
        (`submit`: the worker's trust decides there).

        Raises:
            InputError: an option names no usable model, tools, checkpoint
                age, step timeout, session or MCP server, or a model setting
                out of its range or that the model's provider cannot send.
        """
        return build_agent(
            model=self.model,
            fallback_on_pressure=self.fallback_on_pressure,
            model_settings=model_settings(
                temperature=self.temperature,
                max_output_tokens=self.max_output_tokens,
                seed=self.seed,
                reasoning_effort=self.reasoning_effort,
            ),
            tool_files=self.tools or [],
            instructions=self.instructions,
            max_steps=self.max_steps,
            max_tokens=self.max_tokens,
            max_cost=self.max_cost,
            max_tool_calls=self.max_tool_calls,
            allow_shell=self.allow_shell,
            checkpoint=checkpoint_policy(
                self.checkpoint_strategy, self.keep_checkpoints, self.checkpoint_max_age
            ),
            step_timeout=duration_seconds("--step-timeout", self.step_timeout),
            session=self.session,
            mcp=checked_mcp_servers(self.mcp or [], self.mcp_risk or [], trust=trust),
        )

    def deadline_seconds(self) -> float | None:
        """The seconds ``--deadline`` gives the task, or None without it.

        Raises:
            InputError: it is not a duration, or leaves no time.
        """
        return deadline_seconds(self.deadline)


def with_agent_options(command: Callable[Concatenate[AgentOptions, ...], R]) -> Callable[..., R]:
    """`command` as Typer reads it: the fields of `AgentOptions` as its first parameters, then its own.

    `command` takes the bundle as its first parameter; Typer passes every
    parameter by name, and the fields go into the bundle.
    """
    bundled = _parameters()
    declared = inspect.signature(command, eval_str=True)
    _bundle, *own = declared.parameters.values()
    signature = declared.replace(parameters=[*bundled, *own])

    @functools.wraps(command)
    def with_options(**given: Any) -> R:
        options = AgentOptions(**{parameter.name: given.pop(parameter.name) for parameter in bundled})
        return command(options, **given)

    with_options.__signature__ = signature  # type: ignore[attr-defined]
    # Typer resolves the annotations too: those copied from `command` name the bundle, not its fields.
    with_options.__annotations__ = {
        parameter.name: parameter.annotation for parameter in signature.parameters.values()
    }
    return with_options


def _parameters() -> list[inspect.Parameter]:
    hints = typing.get_type_hints(AgentOptions, include_extras=True)  # Annotated keeps the typer.Option
    return [
        inspect.Parameter(
            field.name,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            default=inspect.Parameter.empty if field.default is dataclasses.MISSING else field.default,
            annotation=hints[field.name],
        )
        for field in dataclasses.fields(AgentOptions)
    ]
