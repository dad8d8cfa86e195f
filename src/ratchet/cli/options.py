"""The options and arguments more than one command takes, each declared once.

A command names them as the types of its parameters (``store: StoreOption =
DEFAULT_STORE_URL``), so every command spells, documents and checks an option
the same way.

Every command that takes ``--store`` also takes ``--force-open``. Its value
does not reach the command: its callback hands it to `store_access`, which
opens the command's store with it, however many calls down that happens.
"""

from __future__ import annotations

import math
from typing import Annotated

import typer

from ..limits import MAX_CONCURRENCY, MAX_COUNT, MAX_NAME_CHARS, MAX_SECONDS
from ..policy import CheckpointStrategy
from .completion import complete_task_id
from .logs import LogFormat, LogLevel
from .store_access import skip_integrity_check

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_SECONDS",
    "AllowCodeOption",
    "AllowShellOption",
    "AllowedHostOption",
    "CheckpointMaxAgeOption",
    "CheckpointStrategyOption",
    "CompatibleVersionsOption",
    "DeadlineOption",
    "FallbackOnPressureOption",
    "ForceOpenOption",
    "InstructionArgument",
    "InstructionsOption",
    "JsonOption",
    "KeepCheckpointsOption",
    "LabelOption",
    "LeaseTtlOption",
    "LogFormatOption",
    "LogLevelOption",
    "MaxCostOption",
    "MaxInstructionBytesOption",
    "MaxOutputTokensOption",
    "MaxStepsOption",
    "MaxTokensOption",
    "MaxToolCallsOption",
    "ModelOption",
    "OptionalTaskArgument",
    "PricedAsOption",
    "ReasoningEffortOption",
    "RetainOption",
    "SeedOption",
    "ServerModelOption",
    "SessionOption",
    "StepTimeoutOption",
    "StoreOption",
    "TaskArgument",
    "TaskNameOption",
    "TemperatureOption",
    "ToolsOption",
    "finite",
]

# Every number an option takes is bounded, so no value reaches a store or a date it cannot hold:
# counts and sequence numbers as the stores keep them (MAX_COUNT), seconds a day at most
# (MAX_SECONDS); ratchet.toml is held to the same bounds (ratchet.config).


def finite(value: float | None) -> float | None:
    """Refuse ``nan``, which passes every range check (a Typer callback for float options).

    Raises:
        typer.BadParameter: `value` is not a number.
    """
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"{value} is not a number of seconds")
    return value


# --------------------------------------------------------------------------- every command

StoreOption = Annotated[
    str,
    typer.Option(
        "--store",
        envvar="RATCHET_STORE",
        metavar="URL",
        help="Where Ratchet keeps its state: sqlite:///PATH, sqlite:////ABS/PATH, "
        "postgresql://USER@HOST/DB or memory://.",
    ),
]
ForceOpenOption = Annotated[
    bool,
    typer.Option(
        "--force-open",
        expose_value=False,
        callback=skip_integrity_check,
        help="Open an SQLite database even if it fails its integrity check (back it up first).",
    ),
]
LogLevelOption = Annotated[
    LogLevel,
    typer.Option(
        "--log-level",
        envvar="RATCHET_LOG_LEVEL",
        case_sensitive=False,
        help="Log Ratchet's lines of this level and above to stderr.",
    ),
]
LogFormatOption = Annotated[
    LogFormat,
    typer.Option(
        "--log-format",
        envvar="RATCHET_LOG_FORMAT",
        case_sensitive=False,
        help="text: a line for people; json: one JSON object a line (time, level, logger, message).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
TaskArgument = Annotated[
    str,
    typer.Argument(metavar="TASK", help="The task's id.", autocompletion=complete_task_id),
]
RetainOption = Annotated[
    list[str] | None,
    typer.Option(
        "--retain",
        envvar="RATCHET_WORKER_RETAIN",
        metavar="STATUS=AGE",
        help="Delete the tasks of STATUS (completed, failed or cancelled) that ended more than AGE "
        "ago (completed=30d; repeat for each status).",
    ),
]
OptionalTaskArgument = Annotated[
    str | None,
    typer.Argument(
        metavar="TASK",
        help="The task's id; or, instead, the filters of `ratchet tasks` for every task they match.",
        autocompletion=complete_task_id,
        show_default=False,
    ),
]

# --------------------------------------------------------------------------- running tasks here

CompatibleVersionsOption = Annotated[
    bool,
    typer.Option(
        "--compatible-versions",
        envvar="RATCHET_COMPATIBLE_VERSIONS",
        help="Run a task that started on another code version when its journal replays on this code.",
    ),
]

LeaseTtlOption = Annotated[
    float,
    typer.Option(
        "--lease-ttl",
        envvar="RATCHET_WORKER_LEASE_TTL",
        min=1.0,
        max=MAX_SECONDS,
        callback=finite,
        metavar="SECONDS",
        help="How long a claim on a task lasts without a heartbeat (renewed every third of it).",
    ),
]

AllowCodeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-code",
        metavar="PATH|MODULE",
        help="Also let tasks load code from this file, directory or module (beyond the project "
        "root and installed packages); repeat for more. RATCHET_ALLOW_CODE adds more.",
    ),
]

AllowedHostOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        metavar="NAME[:PORT]",
        help="Also answer requests that name this host (a DNS name or an address; without a port, "
        "at any port); repeat for more. RATCHET_ALLOWED_HOSTS adds more. Any other name but "
        "loopback's and the address a request came to is refused (421).",
    ),
]

# --------------------------------------------------------------------------- the agent (run, submit)

InstructionArgument = Annotated[
    str,
    typer.Argument(metavar="INSTRUCTION", help="What the agent should do; - reads it from standard input."),
]
MaxInstructionBytesOption = Annotated[
    int,
    typer.Option(
        "--max-instruction-bytes",
        envvar="RATCHET_MAX_INSTRUCTION_BYTES",
        min=1,
        max=MAX_COUNT,
        metavar="N",
        help="Refuse an instruction larger than N bytes (UTF-8).",
    ),
]
ModelOption = Annotated[
    list[str],
    typer.Option(
        "--model",
        "-m",
        envvar="RATCHET_MODEL",
        metavar="PROVIDER:NAME",
        help="openai:NAME, ollama:NAME, anthropic:NAME or scripted:SCRIPT.json "
        "(default: [model] default of ratchet.toml). Again for a fallback chain: each next "
        "model is called when the one before fails for good.",
    ),
]
FallbackOnPressureOption = Annotated[
    bool,
    typer.Option(
        "--fallback-on-pressure",
        help="Once the task's budget is 80 % used, call the next --model of the chain.",
    ),
]
ServerModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        envvar="RATCHET_MODEL",
        metavar="PROVIDER:NAME",
        help="The model of the agent tasks clients ask for without naming one "
        "(default: [model] default of ratchet.toml).",
    ),
]
ToolsOption = Annotated[
    list[str] | None,
    typer.Option(
        "--tools",
        metavar="FILE.py|MODULE",
        help="Give the agent every @ratchet.tool of this file or module; repeat for more.",
    ),
]
InstructionsOption = Annotated[
    str,
    typer.Option("--instructions", metavar="TEXT", help="What the agent is and how it works."),
]
DeadlineOption = Annotated[
    str | None,
    typer.Option(
        "--deadline",
        metavar="DURATION",
        help="Fail the task if not done by then: 90s, 10m, 2h.",
    ),
]
MaxStepsOption = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, max=MAX_COUNT, metavar="N", help="At most N plan steps may start."),
]
MaxTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        max=MAX_COUNT,
        metavar="N",
        help="At most N LLM tokens (prompt plus completion).",
    ),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0.000001,
        max=1e9,
        callback=finite,
        metavar="USD",
        help="Fail the task once its model calls cost this many US dollars (unpriced calls count 0).",
    ),
]
PricedAsOption = Annotated[
    str | None,
    typer.Option(
        "--priced-as",
        envvar="RATCHET_PRICED_AS",
        metavar="PROVIDER:NAME",
        help="Price the model calls no price table prices (a gateway's, say) as this model, e.g. "
        "openai:gpt-4o, so --max-cost holds; an endpoint's own priced_as in ratchet.toml comes first.",
    ),
]
MaxToolCallsOption = Annotated[
    int,
    typer.Option(
        "--max-tool-calls",
        min=1,
        max=MAX_COUNT,
        metavar="N",
        help="Refuse a model answer asking for more than N tool calls at once (the model is told).",
    ),
]
AllowShellOption = Annotated[
    bool, typer.Option("--allow-shell", help="Give the agent a shell in its workspace.")
]

# The agent's checkpoint policy and step timeouts (docs/agent.md, "Checkpoints and step timeouts").
CheckpointStrategyOption = Annotated[
    CheckpointStrategy | None,
    typer.Option(
        "--checkpoint-strategy",
        help="When the task writes checkpoints: every_step (the default), every_iteration (also "
        "before each model call) or on_state_change (also after each change of its state).",
    ),
]
KeepCheckpointsOption = Annotated[
    int | None,
    typer.Option(
        "--keep-checkpoints",
        min=1,
        max=MAX_COUNT,
        metavar="N",
        help="Keep the task's newest N checkpoints, dropping older ones as it goes (default: all).",
    ),
]
CheckpointMaxAgeOption = Annotated[
    str | None,
    typer.Option(
        "--checkpoint-max-age",
        metavar="DURATION",
        help="Resume the task by itself only while its newest checkpoint is younger than this "
        "(30m, 2h); older, it is set aside until `ratchet resume TASK --force`.",
    ),
]
SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        metavar="ID",
        help="Bind the agent to a session: its earlier tasks' instructions and results go into "
        "the prompts, and its tools share the session's state (docs/agent.md).",
    ),
]

TaskNameOption = Annotated[
    str | None,
    typer.Option(
        "--name",
        metavar="NAME",
        help="The task's name, as `ratchet tasks` shows it and its --name matches "
        f"(default: the start of the instruction; at most {MAX_NAME_CHARS} characters).",
    ),
]
LabelOption = Annotated[
    list[str] | None,
    typer.Option(
        "--label",
        metavar="KEY=VALUE",
        help="A label to find the task by (`ratchet tasks --label`); repeat for several.",
    ),
]

StepTimeoutOption = Annotated[
    str | None,
    typer.Option(
        "--step-timeout",
        metavar="DURATION",
        help="An attempt at a step that takes longer (90s, 10m) fails as a failed check would: "
        "tried again, then replanned.",
    ),
]

# How the agent's model answers (docs/agent.md, "Model settings"): checked by ModelSettings, in one
# line, and against the model's provider (a setting its API cannot send is refused before any task).
TemperatureOption = Annotated[
    float | None,
    typer.Option(
        "--temperature",
        metavar="T",
        help="The model's temperature, 0 (the likeliest tokens) to 2 (the most varied).",
    ),
]
MaxOutputTokensOption = Annotated[
    int | None,
    typer.Option(
        "--max-output-tokens",
        metavar="N",
        help="At most N tokens in each model answer (--max-tokens bounds the whole task).",
    ),
]
SeedOption = Annotated[
    int | None,
    typer.Option(
        "--seed",
        metavar="N",
        help="Ask the model to sample the same way for the same request, where its server can.",
    ),
]
ReasoningEffortOption = Annotated[
    str | None,
    typer.Option(
        "--reasoning-effort",
        metavar="low|medium|high",
        help="How hard a reasoning model thinks before it answers.",
    ),
]

# The agent's MCP servers (docs/mcp.md, "Giving an agent MCP tools").
McpOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp",
        metavar="'COMMAND ARGS'|URL",
        help="Give the agent the tools of this MCP server: a command run over stdio, or an "
        "http(s):// streamable-HTTP URL; repeat for more.",
    ),
]
McpRiskOption = Annotated[
    list[str] | None,
    typer.Option(
        "--mcp-risk",
        metavar="TOOL=LEVEL",
        help="Override the risk an MCP tool's annotations give: read_only, idempotent, write_local "
        "or external_action (which waits for approval); repeat for more.",
    ),
]
