"""The records Ratchet keeps: typed, validated, frozen, with a JSON round trip.

Every record is a frozen pydantic model (`Record`), one module a concept:

- `task`: the task and its status machine; `plan`: its planned steps;
- `journal`: each call it made and its checkpoints; `state` and
  `state_patch`: its working memory and the only way that changes;
- `people`: risk levels and a person's decisions; `events`: its progress;
- `conversation`: message threads and sessions; `inbox`: messages sent to a task;
  `stream`: what readers follow while a task runs (model text as it is written);
- `queue`: wake-ups, workers' leases and the workers' presence; `changes`: the store's log of task
  changes; `grants`: leave to write another's task; `listing`: what a task
  listing asks for and gets;
- `langgraph`: the rows a LangGraph checkpointer keeps; `limit`: a rate or concurrency limit
  every worker honours; `spend`: daily spend caps beyond a task;
- `compact_json`: the one JSON encoder for what the store keeps (not re-exported).
"""

from __future__ import annotations

from .base import NonEmpty, Record, utcnow
from .changes import TaskChange, TaskChangeKind
from .conversation import Message, Session
from .events import Event, Severity
from .grants import TaskGrant
from .inbox import InboxMessage
from .journal import Checkpoint, Operation, OpKind, OpStatus
from .langgraph import LangGraphCheckpoint, LangGraphValue, LangGraphWrite
from .limit import Limit
from .listing import ALL_TASKS, OLDEST_FIRST, TaskCursor, TaskFilter, TaskOrder, TaskRow, TaskSort
from .people import Approval, ApprovalStatus, Constraints, HumanInTheLoop, RiskLevel
from .plan import Plan, PlanStep, Step, StepStatus, check_step_move
from .queue import Lease, Trigger, WorkerPresence
from .spend import CapScope, CapSpend, CostTotal, SpendCap
from .state import AgentState, Artifact, ArtifactRef, Fact
from .state_patch import (
    AddArtifact,
    AddOpenQuestions,
    AppendFacts,
    PatchOp,
    ReplacePlan,
    ResolveQuestion,
    SetRiskFlag,
    StatePatch,
)
from .stream import StreamEntry, StreamKind
from .task import Task, TaskStatus, WaitReason, check_task_move

__all__ = [
    "ALL_TASKS",
    "OLDEST_FIRST",
    "AddArtifact",
    "AddOpenQuestions",
    "AgentState",
    "AppendFacts",
    "Approval",
    "ApprovalStatus",
    "Artifact",
    "ArtifactRef",
    "CapScope",
    "CapSpend",
    "Checkpoint",
    "Constraints",
    "CostTotal",
    "Event",
    "Fact",
    "HumanInTheLoop",
    "InboxMessage",
    "LangGraphCheckpoint",
    "LangGraphValue",
    "LangGraphWrite",
    "Lease",
    "Limit",
    "Message",
    "NonEmpty",
    "OpKind",
    "OpStatus",
    "Operation",
    "PatchOp",
    "Plan",
    "PlanStep",
    "Record",
    "ReplacePlan",
    "ResolveQuestion",
    "RiskLevel",
    "Session",
    "SetRiskFlag",
    "Severity",
    "SpendCap",
    "StatePatch",
    "Step",
    "StepStatus",
    "StreamEntry",
    "StreamKind",
    "Task",
    "TaskChange",
    "TaskChangeKind",
    "TaskCursor",
    "TaskFilter",
    "TaskGrant",
    "TaskOrder",
    "TaskRow",
    "TaskSort",
    "TaskStatus",
    "Trigger",
    "WaitReason",
    "WorkerPresence",
    "check_step_move",
    "check_task_move",
    "utcnow",
]
