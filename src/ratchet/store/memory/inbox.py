"""The inbox operations (`InboxOps`) of the memory store, as part of its operations."""

from __future__ import annotations

from ...errors import TaskNotFound
from ...records import InboxMessage, utcnow
from ..ops.inbox import InboxOps
from .undo import UndoLog

__all__ = ["MemoryInbox"]


class MemoryInbox(InboxOps, UndoLog):
    """Each task's inbox as a dict of JSON text by seq; ``tasks`` is the memory store's task table."""

    tasks: dict[str, str]

    def __init__(self) -> None:
        super().__init__()
        self.inbox: dict[str, dict[int, str]] = {}

    def _inbox_of(self, task_id: str) -> dict[int, str]:
        if task_id not in self.tasks:
            raise TaskNotFound(task_id)
        return self._rows(self.inbox, task_id)

    async def send_message(self, message: InboxMessage) -> InboxMessage:
        box = self._inbox_of(message.task_id)
        stored = message.model_copy(
            update={"seq": max(box, default=0) + 1, "taken_by": None, "taken_at": None}
        )
        self._set(box, stored.seq, stored.to_json())
        return stored

    async def take_messages(
        self, task_id: str, name: str, *, taken_by: int, limit: int | None = 1
    ) -> list[InboxMessage]:
        box = self._inbox_of(task_id)
        pending = [
            m for m in (InboxMessage.from_json(box[s]) for s in sorted(box)) if m.pending and m.name == name
        ]
        now = utcnow()
        taken = [m.model_copy(update={"taken_by": taken_by, "taken_at": now}) for m in pending[:limit]]
        for message in taken:
            self._set(box, message.seq, message.to_json())
        return taken

    async def list_inbox(self, task_id: str, *, pending_only: bool = False) -> list[InboxMessage]:
        box = self.inbox.get(task_id, {})
        messages = [InboxMessage.from_json(box[seq]) for seq in sorted(box)]
        return [m for m in messages if m.pending or not pending_only]
