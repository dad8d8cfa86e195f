"""Ratchet: a durable runtime for LLM agents.

Tasks survive any crash and never repeat a side effect: every model call and
tool call is journaled before it acts, so any worker can resume a task from
where it stopped.
"""

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from .errors import (
    ConflictError,
    InputError,
    InvalidTransition,
    LeaseLost,
    RatchetError,
    StoreError,
    TaskNotFound,
)
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
    StatePatch,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    Trigger,
    WaitReason,
)
from .policy import Budget
from .store import DEFAULT_STORE_URL, StateStore, open_store

try:
    __version__ = _version("ratchet")
except _PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "DEFAULT_STORE_URL",
    "AgentState",
    "Artifact",
    "Budget",
    "Checkpoint",
    "ConflictError",
    "Event",
    "InputError",
    "InvalidTransition",
    "Lease",
    "LeaseLost",
    "Message",
    "Operation",
    "Plan",
    "RatchetError",
    "Session",
    "StatePatch",
    "StateStore",
    "Step",
    "StepStatus",
    "StoreError",
    "Task",
    "TaskNotFound",
    "TaskStatus",
    "Trigger",
    "WaitReason",
    "__version__",
    "open_store",
]
