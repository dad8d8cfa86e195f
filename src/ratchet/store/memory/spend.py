"""The spend caps (`SpendOps`) of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt

from ...records import CapScope, CapSpend, SpendCap, Task
from ..ops.spend import SpendOps
from .undo import UndoLog

__all__ = ["MemorySpend"]


class MemorySpend(SpendOps, UndoLog):
    """Each cap as JSON text by ``(scope, name)``; each day's total by ``(scope, name, day)``."""

    tasks: dict[str, str]  # the store's tasks (MemoryOps), to find the caps that cover one

    def __init__(self) -> None:
        super().__init__()
        self.spend_caps: dict[tuple[str, str], str] = {}
        self.spend_days: dict[tuple[str, str, str], tuple[float, bool]] = {}

    async def set_spend_cap(self, cap: SpendCap) -> SpendCap:
        key = (str(cap.scope), cap.name)
        before = self.spend_caps.get(key)
        if before is not None:
            cap = cap.model_copy(update={"created_at": SpendCap.from_json(before).created_at})
        self._set(self.spend_caps, key, cap.to_json())
        return cap

    async def delete_spend_cap(self, scope: CapScope, name: str) -> bool:
        key = (str(scope), name)
        if key not in self.spend_caps:
            return False
        self._delete(self.spend_caps, key)
        for day in [d for d in self.spend_days if d[:2] == key]:
            self._delete(self.spend_days, day)
        return True

    async def list_spend_caps(self, *, day: dt.date) -> list[CapSpend]:
        return [self._spend(key, day) for key in sorted(self.spend_caps)]

    async def spend_for_task(self, task_id: str, *, day: dt.date) -> list[CapSpend]:
        return [self._spend(key, day) for key in self._covering(task_id)]

    async def count_spend(self, task_id: str, cost: float, *, day: dt.date) -> None:
        for scope, name in self._covering(task_id):
            spent, told = self.spend_days.get((scope, name, day.isoformat()), (0.0, False))
            self._set(self.spend_days, (scope, name, day.isoformat()), (spent + cost, told))

    async def mark_spend_pressure(self, scope: CapScope, name: str, *, day: dt.date) -> bool:
        key = (str(scope), name, day.isoformat())
        found = self.spend_days.get(key)
        if found is None or found[1]:
            return False
        self._set(self.spend_days, key, (found[0], True))
        return True

    def _covering(self, task_id: str) -> list[tuple[str, str]]:
        text = self.tasks.get(task_id)
        if text is None:
            return []
        task = Task.from_json(text)
        return [
            key for key in sorted(self.spend_caps) if SpendCap.from_json(self.spend_caps[key]).covers(task)
        ]

    def _spend(self, key: tuple[str, str], day: dt.date) -> CapSpend:
        spent, told = self.spend_days.get((*key, day.isoformat()), (0.0, False))
        cap = SpendCap.from_json(self.spend_caps[key])
        return CapSpend(cap=cap, day=day, spent=spent, pressure_told=told)
