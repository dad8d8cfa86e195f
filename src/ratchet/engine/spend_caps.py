"""Spend caps beyond a task, held before each live model call (docs/limits.md, "Spend caps").

A cap (`ratchet budget set`) limits what the priced model calls of an agent's
tasks, or of the tasks with a label, cost in a UTC day, across every worker.
Each priced call's cost is added to the day's total of every cap covering its
task in the transaction that records the call (`Journal.record_outcome`); a
call no table prices counts nothing, as toward a task's ``max_cost``.

Before a live model call, `check_spend_caps` reads the day's totals of the
caps covering the task (one small read). At 80 % of a cap it records a
``spend_cap_pressure`` event, once per cap per day whichever task sees it
first. At the cap the call does not start: by default the task fails
(`BudgetExceeded`, naming the cap); a cap set with ``--approve-over`` parks
the task ``waiting(approval)`` instead, and a person's ``ratchet approve``
lets it go over for the rest of that UTC day (``ratchet deny`` fails it).
A replayed call was paid for already: it is never held.
"""

from __future__ import annotations

from typing import NoReturn, Protocol

from pydantic import JsonValue

from ..errors import BudgetExceeded
from ..records import Approval, ApprovalStatus, CapSpend, Event, Lease, Severity, WaitReason, utcnow
from ..store import StateStore
from .budget import PRESSURE_AT
from .calls import Call

__all__ = ["CapsHolder", "check_spend_caps"]


class CapsHolder(Protocol):
    """What of a task's context the caps use (`Context` has it)."""

    store: StateStore
    lease: Lease

    @property
    def task_id(self) -> str: ...

    async def suspend(
        self, reason: WaitReason, message: str, *, data: dict[str, JsonValue] | None = None
    ) -> NoReturn: ...


async def check_spend_caps(ctx: CapsHolder, call: Call) -> None:
    """Let a live model call start, tell a cap's pressure, or hold the call at a cap.

    Raises:
        BudgetExceeded: a cap is reached and goes over only with a person's
            approval that was denied, or not at all.
        TaskSuspended: a cap is reached and the task now waits for a
            person's approval to go over it.
    """
    day = utcnow().date()
    spends = await ctx.store.spend_for_task(ctx.task_id, day=day)
    reached = [spend for spend in spends if spend.reached]
    for spend in spends:
        if spend not in reached and spend.spent >= PRESSURE_AT * spend.cap.daily and not spend.pressure_told:
            await _tell_pressure(ctx, spend)
    if reached:
        await _over(ctx, call, reached)


def _used(spend: CapSpend) -> str:
    return f"{spend.spent:.4g} of {spend.cap.daily:g} USD on {spend.day.isoformat()} (UTC)"


async def _tell_pressure(ctx: CapsHolder, spend: CapSpend) -> None:
    cap = spend.cap
    event = Event(
        task_id=ctx.task_id,
        kind="spend_cap_pressure",
        severity=Severity.WARNING,
        message=f"spend cap {cap.target}: {_used(spend)} spent, 80 % or more",
        data={"cap": cap.target, "spent": spend.spent, "daily": cap.daily, "day": spend.day.isoformat()},
    )
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        if await tx.mark_spend_pressure(cap.scope, cap.name, day=spend.day):
            await tx.append_event(event)


async def _over(ctx: CapsHolder, call: Call, reached: list[CapSpend]) -> None:
    said = "; ".join(f"spend cap {spend.cap.target} reached: {_used(spend)}" for spend in reached)
    hard = [spend.cap for spend in reached if not spend.cap.approve_over]
    if hard:
        cap = hard[0]
        raise BudgetExceeded(
            f"{said}; no model call starts until the next UTC day, or raise it with "
            f"`ratchet budget set --{cap.scope} {cap.name} --daily USD`"
        )
    targets = [spend.cap.target for spend in reached]
    day = reached[0].day.isoformat()
    for approval in await ctx.store.list_approvals(ctx.task_id):
        if not _covers(approval, targets, day):
            continue
        if approval.status is ApprovalStatus.APPROVED:
            return  # a person let the task go over for the rest of the day
        if approval.status is ApprovalStatus.DENIED:
            raise BudgetExceeded(
                f"{said}; a person denied going over: {approval.reason or 'no reason given'}"
            )
    arguments: dict[str, JsonValue] = {"spend_caps": list(targets), "day": day}
    await ctx.store.request_approval(
        Approval(task_id=ctx.task_id, seq=call.seq, tool=call.name, arguments=arguments, why=said),
        fence=ctx.lease,
    )
    await ctx.suspend(
        WaitReason.APPROVAL,
        f"{call.name} (operation {call.seq}) waits for a person's approval to go over: {said}; "
        f"let it with `ratchet approve {ctx.task_id}`, or stop it with "
        f"`ratchet deny {ctx.task_id} --reason TEXT`",
        data={"seq": call.seq, "spend_caps": list(targets), "day": day},
    )


def _covers(approval: Approval, targets: list[str], day: str) -> bool:
    """Whether a decision on going over was made for all of `targets`, on `day`."""
    asked = approval.arguments if isinstance(approval.arguments, dict) else {}
    caps = asked.get("spend_caps")
    return asked.get("day") == day and isinstance(caps, list) and set(targets) <= set(caps)
