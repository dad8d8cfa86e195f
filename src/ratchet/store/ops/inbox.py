"""`InboxOps`: the store operations of the tasks' inboxes (messages sent to running tasks).

Part of `StoreOps` (store.py); the memory store (store/memory/inbox.py) and
every SQL store (store/sql/inbox.py) implement them with the behaviour written here.
"""

from __future__ import annotations

import abc

from ...records import InboxMessage

__all__ = ["InboxOps"]


class InboxOps(abc.ABC):
    """Sending to a task's inbox, taking from it, and listing it."""

    @abc.abstractmethod
    async def send_message(self, message: InboxMessage) -> InboxMessage:
        """Put a message in its task's inbox; it gets the task's next inbox seq (from 1) and is returned.

        Holds the task's row until the transaction ends, as `take_messages`
        does: a send and a receive of one task happen one after the other,
        so a receive that finds nothing and makes its task wait is always
        seen by a send that comes after it (which then wakes the task).

        Raises:
            TaskNotFound: no task has that id.
        """

    @abc.abstractmethod
    async def take_messages(
        self, task_id: str, name: str, *, taken_by: int, limit: int | None = 1
    ) -> list[InboxMessage]:
        """Take the task's oldest `limit` messages named `name` (all, when None) no receive took yet.

        Each is marked taken by the receive at journal seq `taken_by` and
        returned, oldest first; an empty list when none waits. Holds the
        task's row until the transaction ends (see `send_message`).

        Raises:
            TaskNotFound: no task has that id.
        """

    @abc.abstractmethod
    async def list_inbox(self, task_id: str, *, pending_only: bool = False) -> list[InboxMessage]:
        """Return the task's inbox, oldest first: only the messages no receive took yet, if asked."""
