"""The durable engine: the context a workflow runs in, the middleware, the journal, runner and worker.

- `context`: `Context`, whose parts beside its calls are modules of their own (`children`,
  `inbox`, `people`, `questions`, `queued_patches`, `budget`); `current`: the one running here;
- `calls/`: a call on its way through the middleware chain, and what makes each kind;
- `journal/`: what a task recorded at each seq, and what a replay reads back;
- `run/`: running tasks under leases: the runner, the worker, a task's tree in one process;
- `workflow` and `task_spec`: the code a task names, and a new task made from it;
- `outside_writes`: writes to a task from outside its run (a patch, a handoff, a grant);
- `batches` and `retention`: one verb for every task a filter keeps, a page at a time; and
  deleting the ended tasks kept past their status's age (what a worker with `--retain` does);
- `streams` and `stream_writes`: what a run writes to its task's stream, in batches (a model's
  answer as it comes, the marks of its attempts), and ``ctx.write_stream``;
- `faults`: named crash points, for the tests that kill a worker.
"""

from .calls import Call, CallContext, TaskSuspended
from .calls.compaction import Compaction
from .calls.middleware import Middleware, compose, default_chain
from .context import Context
from .run.holders import WorkerIdentity
from .run.runner import run_task
from .run.worker import Worker
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
