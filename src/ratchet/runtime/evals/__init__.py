"""Evals from the journal: recorded tasks run again with a new model, tool calls served from the recording.

- `report`: what an eval found (`EvalReport`, `TaskEval`, and `EvalRun`, what a scorer receives);
- `recording`: the middleware that answers tool calls from a recorded journal and runs none;
- `scoring`: the built-in scorers (``exact``, ``json-diff``) and the user's, loaded under code trust;
- `running`: a new run of each task in a memory store of its own, and its verdict;
- `methods`: ``Runtime.evaluate``.

docs/evals.md says what an eval does and why.
"""

from __future__ import annotations

from .methods import EvalMethods
from .report import EvalReport, EvalRun, EvalToolCall, EvalTotals, TaskEval, Verdict

__all__ = ["EvalMethods", "EvalReport", "EvalRun", "EvalToolCall", "EvalTotals", "TaskEval", "Verdict"]
