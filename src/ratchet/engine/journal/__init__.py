"""The journal: what a task recorded at each seq, and what a replay reads back.

- `task_journal`: `Journal`, the task's journal as the engine sees it, every write fenced;
- `large_results`: a large tool result kept once as an artifact, read back on replay;
- `values`: `record_value`, one value recorded at a seq, the same on every replay;
- `clock_and_uuid`: ``ctx.now``, ``ctx.uuid`` and ``ctx.sleep``, each such a value;
- `versioning`: ``ctx.patched``, markers that let changed code replay old journals.

``ratchet.engine.journal`` names the `Journal`, as it did when it was one module.
"""

from .task_journal import Journal

__all__ = ["Journal"]
