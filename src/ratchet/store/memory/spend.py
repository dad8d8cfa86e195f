"""The spend caps (`SpendOps`) of the memory store, as part of its operations."""

from __future__ import annotations

import datetime as dt

from ...records import CapScope, CapSpend, CostTotal, Operation, OpKind, OpStatus, SpendCap, Task
from ..ops.spend import SpendOps
from .undo import UndoLog

__all__ = ["MemorySpend"]


class MemorySpend(SpendOps, UndoLog):
    """Each cap as JSON text by ``(scope, name)``; each day's total by ``(scope, name, day)``."""

    tasks: dict[str, str]  # the store's tasks (MemoryOps), to find the caps that cover one
    ops: dict[str, dict[int, str]]  # the store's journal (MemoryOps), by task and seq, to add up costs

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

    async def cost_totals(self, *, since: dt.datetime | None, until: dt.datetime | None) -> list[CostTotal]:
        totals: dict[tuple[str, str, str], dict[str, float]] = {}
        for task_id, rows in self.ops.items():
            text = self.tasks.get(task_id)
            if text is None:
                continue
            task = Task.from_json(text)
            for row in rows.values():
                op = Operation.from_json(row)
                done = op.finished_at
                if op.kind is not OpKind.MODEL or op.status is not OpStatus.SUCCEEDED or done is None:
                    continue
                if (since is not None and done < since) or (until is not None and done >= until):
                    continue
                asked = op.input.get("model") if isinstance(op.input, dict) else None
                model = asked if isinstance(asked, str) else task.model or "unknown"
                total = totals.setdefault(
                    (done.astimezone(dt.UTC).date().isoformat(), task.agent, model),
                    {"calls": 0, "unpriced_calls": 0, "llm_tokens": 0, "cost": 0.0},
                )
                usage = op.meta.get("usage")
                usage = usage if isinstance(usage, dict) else {}
                cost = usage.get("cost")
                total["calls"] += 1
                total["unpriced_calls"] += cost is None
                total["llm_tokens"] += int(usage.get("prompt_tokens") or 0) + int(
                    usage.get("completion_tokens") or 0
                )
                total["cost"] += float(cost or 0)
        return [
            CostTotal(
                day=dt.date.fromisoformat(day),
                agent=agent,
                model=model,
                calls=int(total["calls"]),
                unpriced_calls=int(total["unpriced_calls"]),
                llm_tokens=int(total["llm_tokens"]),
                cost=total["cost"],
            )
            for (day, agent, model), total in sorted(totals.items())
        ]

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
