"""`Runtime`, the Python API over a store, and what it is made of.

- `runtime`: `Runtime` itself (submit, run, resume, wait, resolve, gc);
- `reading`: its reads (a task, a listing of tasks, a result as its workflow types it);
- `batch`: its verbs for every task a filter keeps (cancel, retry, delete), and retention;
- `replay_check`: whether the code installed now replays the stored tasks' journals;
- `sync`: `SyncRuntime`, the same verbs as plain calls (scripts, notebooks, threads);
- `sessions` and `sharing`: its methods for sessions and for writes to tasks
  on behalf of agents (state patches, notes, handoffs, grants);
- `fork`: new tasks from an old task's journal (a fork from a checkpoint, a
  retry from where it failed);
- `evals`: `Runtime.evaluate`, recorded tasks run again with a new model (docs/evals.md);
- `agent_request`: an agent task a client asks for over HTTP or MCP, checked
  and queued once for both servers.
"""

from __future__ import annotations

from .runtime import Runtime
from .sync import SyncRuntime

__all__ = ["Runtime", "SyncRuntime"]
