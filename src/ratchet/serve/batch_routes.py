"""Batches: cancel, retry or delete every task a filter keeps, counted first (``POST /api/tasks/batch``).

The filter is ``GET /api/tasks``'s, as JSON: the same keys, read by the same
parser (`ratchet.views.task_filter`), so a dashboard that lists a filtered
view can act on exactly that view. Without ``"confirm": true`` nothing is
done: the answer is how many tasks match. With it, each task is acted on as
the route of one task does (`Runtime.cancel_tasks` ...), and the answer says
how many were and which were skipped, and why.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from ..engine.batches import BatchOutcome, started_before
from ..errors import InputError
from ..views.task_filter import MAX_SEARCH_CHARS, FilterText, parse_filter, query_parameter
from .deps import MAX_ID_CHARS, RuntimeDep

__all__ = ["router"]

router = APIRouter(tags=["tasks"])

MAX_REPEATS = 64  # items of a list filter, as GET /api/tasks takes a repeated parameter
MAX_ITEM_CHARS = 400

_Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]
_Items = Annotated[list[_Item], Field(max_length=MAX_REPEATS)]
_Exact = Annotated[str | None, Field(max_length=MAX_ID_CHARS)]
_Short = Annotated[str | None, Field(max_length=MAX_ITEM_CHARS)]
_Amount = Annotated[float | _Item | None, Field(description='US dollars: 0.5 or "0.50".')]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BatchFilter(_Body):
    """Which tasks: every key ``GET /api/tasks`` filters by, with the same meaning (docs/finding-tasks.md)."""

    search: Annotated[str | None, Field(max_length=MAX_SEARCH_CHARS)] = None
    label: _Items = Field(default_factory=list, description="KEY=VALUE each; every one.")
    status: _Items = Field(default_factory=list, description="Any of these.")
    waiting_on: _Items = Field(default_factory=list, description="Any of these.")
    name: _Exact = None
    agent: _Exact = None
    model: _Exact = None
    code_version: _Exact = None
    parent: _Exact = Field(default=None, description="The parent task's id.")
    id_prefix: _Exact = None
    created_after: _Short = Field(default=None, description="ISO 8601, or how long ago: 2h.")
    created_before: _Short = None
    min_cost: _Amount = None
    max_cost: _Amount = None

    def text(self) -> FilterText:
        return FilterText(
            status=self.status,
            waiting_on=self.waiting_on,
            name=self.name,
            agent=self.agent,
            model=self.model,
            code_version=self.code_version,
            parent=self.parent,
            id_prefix=self.id_prefix,
            label=self.label,
            search=self.search,
            since=self.created_after,
            until=self.created_before,
            min_cost=None if self.min_cost is None else str(self.min_cost),
            max_cost=None if self.max_cost is None else str(self.max_cost),
        )


class BatchBody(_Body):
    """What to do to every task the filter keeps, and whether to do it now."""

    action: Literal["cancel", "retry", "delete"]
    filter: BatchFilter = Field(default_factory=BatchFilter)
    reason: str | None = Field(
        default=None, min_length=1, max_length=10_000, description="Why (cancel only); kept as each error."
    )
    confirm: bool = Field(default=False, description="Act; without it, only count the tasks that match.")


@router.post("/tasks/batch", summary="Cancel, retry or delete every task a filter keeps (count first)")
async def batch(rt: RuntimeDep, body: BatchBody) -> dict[str, Any]:
    """Without ``confirm``: ``{"matched": N}``, and nothing is done. With it: ``{"matched", "done",
    "skipped": [{"id", "reason"}]}``.

    Each task is acted on as one task's route does: cancel stops it (its
    children too); retry makes a new attempt, queued for a worker; delete
    removes it and all of it, newest first so a child goes before its
    parent. A task the action refuses (it ended, it has not, it has child
    tasks left) is skipped, with the reason. Only the tasks made before the
    request are acted on. A filter is needed (none: 400), and a bad one is
    a 400 with one line, as ``GET /api/tasks`` answers it.
    """
    if not body.filter.model_dump(exclude_defaults=True):
        raise InputError("say which tasks: give at least one filter (status, agent, label ...)")
    where = parse_filter(body.filter.text(), query_parameter)
    if body.reason is not None and body.action != "cancel":
        raise InputError(f"reason is for cancel; a {body.action} takes none")
    if not body.confirm:
        return {"matched": await rt.store.count_task_rows(started_before(where))}
    outcome: BatchOutcome
    if body.action == "cancel":
        outcome = await rt.cancel_tasks(where, reason=body.reason or "cancelled by a person")
    elif body.action == "retry":
        outcome = await rt.retry_tasks(where)
    else:
        outcome = await rt.delete_tasks(where)
    return outcome.as_json()
