"""The durable engine: context, middleware, journal, runner and worker."""

from .calls import Call, CallContext, TaskSuspended
from .calls.compaction import Compaction
from .calls.middleware import Middleware, compose, default_chain
from .context import Context
from .runner import WorkerIdentity, run_task
from .worker import Worker
from .workflow import Workflow, load_workflow, workflow

__all__ = [
    "Call",
    "CallContext",
    "Compaction",
    "Context",
    "Middleware",
    "TaskSuspended",
    "Worker",
    "WorkerIdentity",
    "Workflow",
    "compose",
    "default_chain",
    "load_workflow",
    "run_task",
    "workflow",
]
