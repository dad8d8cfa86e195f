"""Calls: a model or tool call on its way through the middleware chain, and what makes each kind.

- `call`: `Call` and the `CallContext` a middleware sees, and how a task pauses;
- `middleware`: the chain around every call, built in `default_chain`;
- `in_flight`: a tool call whose run is stopped finishes, and what it did is journaled;
- `observing`: the chain's outermost layer, reporting live calls as spans and metrics;
- `cost`: each live model call priced once, journaled with its answer;
- `compaction`: the middleware that shortens model requests to a token budget;
- `model_calls`: ``ctx.call_model``, and answers held to a pydantic model;
- `foreign_models`: ``ctx.call_foreign_model``, another library's model requests;
- `tool_lookup`: which tool a workflow's call names;
- `tool_serving`: which tool's body runs in this asyncio task.

``ratchet.engine.calls`` names the call itself, as it did when it was one
module: its names are `call`'s.
"""

from .call import Call, CallContext, CallJournal, TaskSuspended, WorkerStopping, step_meta

__all__ = ["Call", "CallContext", "CallJournal", "TaskSuspended", "WorkerStopping", "step_meta"]
