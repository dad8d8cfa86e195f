"""The inbox operations (`InboxOps`) written once for every SQL database, as part of `SqlOps`."""

from __future__ import annotations

from ...records import InboxMessage, TaskStatus, utcnow
from ..ops.inbox import InboxOps
from . import rows
from .driver import Driver, Params

__all__ = ["SqlInbox"]


class SqlInbox(InboxOps):
    """`InboxOps` over a driver; `SqlOps` supplies the driver, the task lock and the numbering."""

    _d: Driver

    async def _lock_task(self, task_id: str) -> TaskStatus:
        raise NotImplementedError  # SqlOps's

    async def _next_number(self, kind: str, query: str, owner: str, params: Params) -> int:
        raise NotImplementedError  # SqlOps's

    async def send_message(self, message: InboxMessage) -> InboxMessage:
        task_id = message.task_id
        await self._lock_task(task_id)
        seq = await self._next_number("inbox", "next_inbox_seq", task_id, {"task_id": task_id})
        stored = message.model_copy(update={"seq": seq, "taken_by": None, "taken_at": None})
        await self._d.execute(
            "insert_inbox_message",
            {
                "task_id": task_id,
                "seq": seq,
                "name": stored.name,
                "sent_at": rows.to_micros(stored.sent_at),
                "record": stored.to_json(),
            },
        )
        return stored

    async def take_messages(
        self, task_id: str, name: str, *, taken_by: int, limit: int | None = 1
    ) -> list[InboxMessage]:
        await self._lock_task(task_id)
        found = await self._d.all(
            "pending_inbox_messages", {"task_id": task_id, "name": name, "limit": limit}
        )
        now = utcnow()
        taken = [
            rows.inbox_from_record(record).model_copy(update={"taken_by": taken_by, "taken_at": now})
            for (record,) in found
        ]
        await self._d.execute_many(
            "take_inbox_message",
            [{"task_id": task_id, "seq": m.seq, "taken_by": taken_by, "record": m.to_json()} for m in taken],
        )
        return taken

    async def list_inbox(self, task_id: str, *, pending_only: bool = False) -> list[InboxMessage]:
        found = await self._d.all("list_inbox", {"task_id": task_id, "pending_only": pending_only})
        return [rows.inbox_from_record(record) for (record,) in found]
