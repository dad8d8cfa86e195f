"""A run's side of the writes made to its task from outside (outside_writes.py): the patches queued for it.

A task's state is rebuilt on resume by replaying its journal, and a running
worker writes the task row as it knows it; so a patch accepted from outside
(applied to the stored state at once, and queued in the task's inbox as a
message named `STATE_PATCH`) is taken by the run as a journaled receive
(``ctx.take_outside_patches``): before its own next patch, and by an agent at
each act turn. A replay takes it at the same place, so the state it rebuilds
holds it. Until then, each write of the task by its run goes through
`outside_view`: the state written is the run's own with every patch still
queued applied on top, and the owning agent is the stored one (a handoff made
meanwhile stands).

A queued patch that no longer applies when the run takes it (the agent
resolved the same question first) is dropped, with a warning event; it was
checked against the state when it was accepted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import JsonValue, ValidationError

from ..errors import StatePatchError
from ..records import AgentState, InboxMessage, Severity, StatePatch, Task

if TYPE_CHECKING:
    from ..store import StoreOps

__all__ = ["STATE_PATCH", "OutsidePatch", "OutsidePatches", "apply_each", "outside_view"]

STATE_PATCH = "state_patch"  # the inbox name of a patch from outside (reserved: a workflow should not use it)


class OutsidePatch:
    """A queued patch as the run takes it: the patch and the agent that sent it (None: a person)."""

    __slots__ = ("by", "patch")

    def __init__(self, patch: StatePatch, by: str | None) -> None:
        self.patch, self.by = patch, by

    @classmethod
    def from_payload(cls, payload: JsonValue) -> OutsidePatch | None:
        """The patch a `STATE_PATCH` message carries; None if it is not one (never written so)."""
        if not isinstance(payload, dict):
            return None
        try:
            patch = StatePatch.model_validate(payload.get("patch"))
        except ValidationError:
            return None
        by = payload.get("by")
        return cls(patch, by if isinstance(by, str) else None)

    @property
    def summary(self) -> str:
        return ", ".join(op.op for op in self.patch.ops)


def _queued(messages: list[InboxMessage]) -> list[OutsidePatch]:
    found = (OutsidePatch.from_payload(m.payload) for m in messages if m.name == STATE_PATCH)
    return [p for p in found if p is not None]


def apply_each(state: AgentState, patches: list[OutsidePatch]) -> tuple[AgentState, list[OutsidePatch]]:
    """`state` with each patch applied in order; and those that no longer apply (left out)."""
    dropped = []
    for outside in patches:
        try:
            state = outside.patch.apply(state)
        except StatePatchError:
            dropped.append(outside)
    return state, dropped


async def outside_view(tx: StoreOps, task: Task, state: AgentState) -> Task:
    """`task` as its run may write it in `tx`: the stored agent, and the patches still queued on `state`.

    With no patch queued the task's own state is kept as it is. Locks the
    task's row first, so an outside write waits for this transaction, or this
    one sees it.
    """
    stored = await tx.get_task_locked(task.id)
    update: dict[str, Any] = {"agent": stored.agent}
    queued = _queued(await tx.list_inbox(task.id, pending_only=True))
    if queued:
        update["state"] = apply_each(state, queued)[0]
    return task.model_copy(update=update)


class _Owner(Protocol):
    state: AgentState
    task: Task

    @property
    def replaying(self) -> bool: ...

    async def take_messages(self, name: str) -> list[JsonValue]: ...

    async def emit(
        self,
        message: str,
        *,
        kind: str = ...,
        severity: Severity = ...,
        data: dict[str, JsonValue] | None = ...,
    ) -> None: ...


class OutsidePatches:
    """``ctx.take_outside_patches()``: a run's side of the patches sent from outside (part of `Context`)."""

    async def take_outside_patches(self: _Owner) -> list[OutsidePatch]:
        """Take the patches sent from outside since the last take and apply them to ``ctx.state``.

        Journaled as a receive (nothing when none waits), so a replay applies
        the same ones at the same place. Returns those applied; one that no
        longer applies is dropped with a warning event.
        """
        live = not self.replaying
        taken = [
            p for p in (OutsidePatch.from_payload(m) for m in await self.take_messages(STATE_PATCH)) if p
        ]
        if not taken:
            return []
        self.state, dropped = apply_each(self.state, taken)
        if live:  # a replay leaves the task as stored (it holds these): ``self.state`` is not whole yet
            self.task = self.task.model_copy(update={"state": self.state})
        for outside in dropped:
            await self.emit(
                f"a state patch from {outside.by or 'a person'} ({outside.summary}) no longer applies "
                "to the state and was dropped",
                kind="state_patch_dropped",
                severity=Severity.WARNING,
                data={"by": outside.by, "patch": outside.patch.model_dump(mode="json")},
            )
        return [p for p in taken if p not in dropped]
