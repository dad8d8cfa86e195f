"""Ratchet: a durable runtime for LLM agents.

Tasks survive any crash and never repeat a side effect: every model call and
tool call is journaled before it acts, so any worker can resume a task from
where it stopped.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from ._distribution import DISTRIBUTION as _DISTRIBUTION
from .agent import Agent
from .engine import Call, Compaction, Context, Middleware, Worker, WorkerIdentity, Workflow, workflow
from .engine.children import Child
from .errors import (
    BudgetExceeded,
    CannotResume,
    CannotRetry,
    ConflictError,
    DeadlineExceeded,
    InputError,
    InvalidModelOutput,
    InvalidTransition,
    LeaseLost,
    NonDeterminismError,
    NonRetryableError,
    OperationFailed,
    RatchetError,
    StoreError,
    TaskNotFound,
)
from .mcp.servers import MCPServer
from .model import (
    AgentState,
    Artifact,
    Checkpoint,
    Event,
    Lease,
    Message,
    Operation,
    Plan,
    Session,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    Trigger,
    WaitReason,
)
from .policy import Budget, CheckpointPolicy, CheckpointStrategy, RetryPolicy
from .providers import register_provider
from .runtime import Runtime
from .state_patch import StatePatch
from .store import DEFAULT_STORE_URL, StateStore, open_store
from .tools import Reconciled, Tool, ToolContext, tool

try:
    __version__ = _version(_DISTRIBUTION)
except _PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

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
    "InvalidModelOutput",
    "InvalidTransition",
    "Lease",
    "LeaseLost",
    "MCPServer",
    "Message",
    "Middleware",
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
    "Task",
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
