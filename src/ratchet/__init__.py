"""Ratchet: a durable runtime for LLM agents.

Tasks survive any crash and never repeat a side effect: every model call and
tool call is journaled before it acts, so any worker can resume a task from
where it stopped.
"""

import importlib
import typing

if typing.TYPE_CHECKING:  # what type checkers and editors see; at run time each name is imported on first use
    from .agent import Agent
    from .agent.mcp.servers import MCPServer
    from .engine import Call, Compaction, Context, Middleware, Worker, WorkerIdentity, Workflow
    from .engine.children import Child
    from .engine.workflow import workflow  # from its module: `ratchet.engine.workflow` is one too
    from .errors import (
        BudgetExceeded,
        CannotResume,
        CannotRetry,
        ConflictError,
        DeadlineExceeded,
        InputError,
        InvalidInputs,
        InvalidModelOutput,
        InvalidResult,
        InvalidTransition,
        LeaseLost,
        NonDeterminismError,
        NonRetryableError,
        OperationFailed,
        RatchetError,
        StoreError,
        TaskNotCompleted,
        TaskNotFound,
    )
    from .policy import Budget, CheckpointPolicy, CheckpointStrategy, RetryPolicy
    from .providers import ModelSettings, register_provider
    from .records import (
        AgentState,
        Artifact,
        Checkpoint,
        Event,
        Lease,
        Message,
        Operation,
        Plan,
        Session,
        StatePatch,
        Step,
        StepStatus,
        Task,
        TaskStatus,
        Trigger,
        WaitReason,
    )
    from .runtime import Runtime, SyncRuntime
    from .store import DEFAULT_STORE_URL, StateStore, open_store
    from .tools import Reconciled, Tool, ToolContext, tool

# The module of each public name. `import ratchet` imports none of them: a name is imported
# when first used (`__getattr__`), so importing the package costs nothing until then, and the
# `ratchet` program (ratchet.cli) owns Ctrl-C before it spends a second importing the runtime.
_MODULES: dict[str, tuple[str, ...]] = {
    ".agent": ("Agent",),
    ".engine": (
        "Call",
        "Compaction",
        "Context",
        "Middleware",
        "Worker",
        "WorkerIdentity",
        "Workflow",
        "workflow",
    ),
    ".engine.children": ("Child",),
    ".errors": (
        "BudgetExceeded",
        "CannotResume",
        "CannotRetry",
        "ConflictError",
        "DeadlineExceeded",
        "InputError",
        "InvalidInputs",
        "InvalidModelOutput",
        "InvalidResult",
        "InvalidTransition",
        "LeaseLost",
        "NonDeterminismError",
        "NonRetryableError",
        "OperationFailed",
        "RatchetError",
        "StoreError",
        "TaskNotCompleted",
        "TaskNotFound",
    ),
    ".agent.mcp.servers": ("MCPServer",),
    ".records": (
        "AgentState",
        "Artifact",
        "Checkpoint",
        "Event",
        "Lease",
        "Message",
        "Operation",
        "Plan",
        "Session",
        "StatePatch",
        "Step",
        "StepStatus",
        "Task",
        "TaskStatus",
        "Trigger",
        "WaitReason",
    ),
    ".policy": ("Budget", "CheckpointPolicy", "CheckpointStrategy", "RetryPolicy"),
    ".providers": ("ModelSettings", "register_provider"),
    ".runtime": ("Runtime", "SyncRuntime"),
    ".store": ("DEFAULT_STORE_URL", "StateStore", "open_store"),
    ".tools": ("Reconciled", "Tool", "ToolContext", "tool"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> typing.Any:
    if name == "__version__":
        value: typing.Any = _version()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    from ._distribution import DISTRIBUTION

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__all__ = [
    "DEFAULT_STORE_URL",
    "Agent",
    "AgentState",
    "Artifact",
    "Budget",
    "BudgetExceeded",
    "Call",
    "CannotResume",
    "CannotRetry",
    "Checkpoint",
    "CheckpointPolicy",
    "CheckpointStrategy",
    "Child",
    "Compaction",
    "ConflictError",
    "Context",
    "DeadlineExceeded",
    "Event",
    "InputError",
    "InvalidInputs",
    "InvalidModelOutput",
    "InvalidResult",
    "InvalidTransition",
    "Lease",
    "LeaseLost",
    "MCPServer",
    "Message",
    "Middleware",
    "ModelSettings",
    "NonDeterminismError",
    "NonRetryableError",
    "Operation",
    "OperationFailed",
    "Plan",
    "RatchetError",
    "Reconciled",
    "RetryPolicy",
    "Runtime",
    "Session",
    "StatePatch",
    "StateStore",
    "Step",
    "StepStatus",
    "StoreError",
    "SyncRuntime",
    "Task",
    "TaskNotCompleted",
    "TaskNotFound",
    "TaskStatus",
    "Tool",
    "ToolContext",
    "Trigger",
    "WaitReason",
    "Worker",
    "WorkerIdentity",
    "Workflow",
    "__version__",
    "open_store",
    "register_provider",
    "tool",
    "workflow",
]
