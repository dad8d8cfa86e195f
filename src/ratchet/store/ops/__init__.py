"""The store's interface: every operation a store has, declared once with the behaviour it must show.

`StoreOps` (store.py) holds them all. The operations of a run's records
(tasks, steps, the journal, messages, events, artifacts, triggers,
checkpoints, approvals, sessions) are declared on it; those of a concept
that came later, or outgrew it, are declared on a class of their own that it
takes in: the inboxes (inbox.py), task grants (grants.py), the log of task
changes (task_changes.py), the task listing (task_rows.py), deleting a task
(task_delete.py), LangGraph's checkpoints (langgraph.py), the leases
(leases.py), the workers' presence (workers.py), the spend caps (spend.py)
and the counts of a task's
journal and events (journal_counts.py). The memory store (store/memory/) and
`SqlOps` (store/sql/) implement them; nothing here knows either.
"""

from .store import StoreOps, checkpoints_to_drop, claim_order, priority_of

__all__ = ["StoreOps", "checkpoints_to_drop", "claim_order", "priority_of"]
