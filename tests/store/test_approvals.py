"""Approvals: a person's decision on one call, durable and decided once."""

from __future__ import annotations

import datetime as dt

import pytest

from ratchet.errors import ConflictError
from ratchet.records import Approval, ApprovalStatus, Task, utcnow
from ratchet.store import StateStore


def _approval(task_id: str, seq: int, **changes: object) -> Approval:
    fields: dict[str, object] = {
        "task_id": task_id,
        "seq": seq,
        "tool": "send_email",
        "arguments": {"to": "ops@example.com"},
        "step": 0,
        "why": "external_action needs a person",
    }
    return Approval.model_validate({**fields, **changes})


def _decided(approval: Approval, status: ApprovalStatus, **changes: object) -> Approval:
    return approval.model_copy(update={"status": status, "decided_at": utcnow(), **changes})


async def test_a_requested_approval_is_stored_pending(store: StateStore, task: Task) -> None:
    asked = await store.request_approval(_approval(task.id, 3))
    assert asked.status is ApprovalStatus.PENDING
    assert await store.get_approval(task.id, 3) == asked
    assert await store.get_approval(task.id, 4) is None


async def test_asking_again_keeps_the_first_record(store: StateStore, task: Task) -> None:
    first = await store.request_approval(_approval(task.id, 3))
    decided = await store.decide_approval(_decided(first, ApprovalStatus.APPROVED))
    again = await store.request_approval(_approval(task.id, 3, arguments={"to": "other"}))
    assert again == decided


async def test_a_decision_is_written_once(store: StateStore, task: Task) -> None:
    asked = await store.request_approval(_approval(task.id, 1))
    denied = await store.decide_approval(_decided(asked, ApprovalStatus.DENIED, reason="not today"))
    assert await store.get_approval(task.id, 1) == denied
    with pytest.raises(ConflictError):
        await store.decide_approval(_decided(asked, ApprovalStatus.APPROVED))
    assert (await store.get_approval(task.id, 1)) == denied


async def test_deciding_what_was_never_asked_raises(store: StateStore, task: Task) -> None:
    with pytest.raises(ConflictError):
        await store.decide_approval(_decided(_approval(task.id, 9), ApprovalStatus.APPROVED))


async def test_edited_arguments_are_kept(store: StateStore, task: Task) -> None:
    asked = await store.request_approval(_approval(task.id, 2))
    await store.decide_approval(
        _decided(asked, ApprovalStatus.APPROVED, edited_arguments={"to": "team@example.com"})
    )
    stored = await store.get_approval(task.id, 2)
    assert stored is not None and stored.edited_arguments == {"to": "team@example.com"}


async def test_list_approvals_by_task_and_pending(store: StateStore, task: Task) -> None:
    now = utcnow()
    a = await store.request_approval(_approval(task.id, 1, requested_at=now))
    b = await store.request_approval(_approval("t2", 1, requested_at=now + dt.timedelta(seconds=1)))
    c = await store.request_approval(_approval(task.id, 5, requested_at=now + dt.timedelta(seconds=2)))
    await store.decide_approval(_decided(a, ApprovalStatus.APPROVED))

    assert [(x.task_id, x.seq) for x in await store.list_approvals()] == [
        (task.id, 1),
        ("t2", 1),
        (task.id, 5),
    ]
    assert await store.list_approvals(task.id, pending_only=True) == [c]
    assert await store.list_approvals(pending_only=True) == [b, c]


async def test_a_request_rolls_back_with_its_transaction(store: StateStore, task: Task) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.request_approval(_approval(task.id, 1))
            raise RuntimeError("boom")
    assert await store.get_approval(task.id, 1) is None
