"""`SpendOps`: daily spend caps beyond a task, and the running totals that count toward them.

Part of `StoreOps` (store.py); the memory store (store/memory/spend.py) and
every SQL store (store/sql/spend.py) implement them with the behaviour written
here. A cap (`SpendCap`) covers the tasks of one agent or those with one
label. What its tasks spend is kept as one running total per cap and UTC day,
added to by `count_spend` in the transaction that records a priced model
call's outcome, so a worker checks a cap with one small read (`spend_for_task`)
however many calls were made that day, and every worker sees every other's.

`cost_totals` adds up what model calls cost by UTC day, agent and model, for
``ratchet costs``: read from the journal, where each call's cost was kept as
it was priced, so it counts every call ever recorded, capped or not.
"""

from __future__ import annotations

import abc
import datetime as dt

from ...records import CapScope, CapSpend, CostTotal, SpendCap

__all__ = ["SpendOps"]


class SpendOps(abc.ABC):
    """Setting, listing and deleting spend caps; counting toward them."""

    @abc.abstractmethod
    async def set_spend_cap(self, cap: SpendCap) -> SpendCap:
        """Keep `cap` as the cap of its scope and name, replacing one set before (whose
        ``created_at`` and spend it keeps); return the cap as kept."""

    @abc.abstractmethod
    async def delete_spend_cap(self, scope: CapScope, name: str) -> bool:
        """Delete the cap of `scope` and `name`, and what it counted; False if there was none."""

    @abc.abstractmethod
    async def list_spend_caps(self, *, day: dt.date) -> list[CapSpend]:
        """Every cap, by scope then name, with what its tasks spent on `day` (0 when nothing)."""

    @abc.abstractmethod
    async def spend_for_task(self, task_id: str, *, day: dt.date) -> list[CapSpend]:
        """The caps that cover task `task_id` (its agent's, its labels'), by scope then name,
        with what they spent on `day`; none for a task no cap covers or that does not exist."""

    @abc.abstractmethod
    async def count_spend(self, task_id: str, cost: float, *, day: dt.date) -> None:
        """Add `cost` (US dollars) to what each cap covering task `task_id` spent on `day`.

        Made in the transaction that records the priced model call, so the
        total and the journal agree after any crash.
        """

    @abc.abstractmethod
    async def mark_spend_pressure(self, scope: CapScope, name: str, *, day: dt.date) -> bool:
        """Note that the cap's 80 % was told on `day`; False when it was already (or it spent
        nothing that day): the caller tells it only on True, so once per cap per day."""

    @abc.abstractmethod
    async def cost_totals(self, *, since: dt.datetime | None, until: dt.datetime | None) -> list[CostTotal]:
        """What the model calls that succeeded cost, by UTC day, agent and model, in that order.

        A call counts on the day it finished (at or after `since`, before
        `until`, when given), under the model its input names (one asked of
        another model), else its task's (``unknown`` when neither), and its
        task's agent. ``cost`` adds the calls' usage costs; a call whose cost
        is missing counts in ``unpriced_calls``; ``llm_tokens`` adds prompt
        and completion tokens. A deleted task's calls are gone with it.
        """
