"""Task grants: an agent's leave to write a task it does not own, kept once per task and agent."""

from __future__ import annotations

import pytest

from ratchet.errors import TaskNotFound
from ratchet.records import Task, TaskGrant
from ratchet.store import StateStore


async def test_a_grant_is_kept_once_per_agent_and_listed_oldest_first(store: StateStore, task: Task) -> None:
    first = TaskGrant(task_id=task.id, agent="b", granted_by="a")
    assert await store.grant_task(first) is True
    assert await store.grant_task(TaskGrant(task_id=task.id, agent="c")) is True
    assert await store.grant_task(TaskGrant(task_id=task.id, agent="b", granted_by="z")) is False

    grants = await store.list_grants(task.id)

    assert [(g.agent, g.granted_by) for g in grants] == [("b", "a"), ("c", None)]
    assert grants[0].granted_at == first.granted_at
    assert await store.list_grants("other") == []


async def test_granting_an_unknown_task_fails_and_keeps_nothing(store: StateStore) -> None:
    with pytest.raises(TaskNotFound):
        await store.grant_task(TaskGrant(task_id="nope", agent="b"))

    assert await store.list_grants("nope") == []


async def test_a_grant_rolls_back_with_its_transaction(store: StateStore, task: Task) -> None:
    with pytest.raises(RuntimeError):
        async with store.transaction() as tx:
            await tx.grant_task(TaskGrant(task_id=task.id, agent="b"))
            raise RuntimeError("abort")

    assert await store.list_grants(task.id) == []
