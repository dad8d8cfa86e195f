"""Running a task's whole tree (it and its child tasks) in this process: ``ratchet run``, `Runtime.run`.

A parent waiting on children holds no worker, so a process that runs a task
by itself (no worker) must run the children too, and the parent again when
a child's end wakes it. `run_tree` does that for the tasks of one tree only,
never another task of the store; a worker on the same store may take any of
them first (the lease decides, and this process leaves that task to it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from ...errors import CannotResume, LeaseLost
from ...records import Task, TaskStatus, WaitReason, utcnow
from ...store import StateStore

__all__ = ["run_tree", "tree_of"]

POLL = 0.05  # seconds between looks at the tree while its tasks run elsewhere or sleep


async def tree_of(store: StateStore, root_id: str) -> list[Task]:
    """The task and its descendants, parents before their children."""
    found = [await store.get_task(root_id)]
    index = 0
    while index < len(found):
        found.extend(await store.list_children(found[index].id))
        index += 1
    return found


async def run_tree(store: StateStore, root_id: str, run_one: Callable[[str], Awaitable[Task]]) -> Task:
    """Run the tree of `root_id` here until the root ends, or nothing in it can go on by itself.

    Returns the root as it stands: ended, waiting on a person, or waiting on
    children that wait on a person (``ratchet show`` tells which).
    """
    running: dict[str, asyncio.Task[Task | None]] = {}

    async def attempt(task_id: str) -> Task | None:
        try:
            return await run_one(task_id)
        except (CannotResume, LeaseLost):  # another process has it
            return None

    try:
        while True:
            tree = await tree_of(store, root_id)
            root = tree[0]
            if root.status.is_terminal or root.waiting_on not in (None, WaitReason.CHILDREN):
                return root  # ended, or waits on a person or a timer: as running one task returns it
            now = utcnow()
            alive = False
            for task in tree:
                if task.status.is_terminal or task.id in running:
                    alive = alive or task.id in running
                    continue
                triggers = await store.list_triggers(task.id)
                if task.status in (TaskStatus.QUEUED, TaskStatus.RUNNING) or any(
                    t.fire_at <= now for t in triggers
                ):
                    running[task.id] = asyncio.create_task(attempt(task.id))
                    alive = True
                elif triggers or task.waiting_on in (WaitReason.TIMER, WaitReason.LIMIT):
                    alive = True  # due later
            if not alive:
                return root
            if not running:
                await asyncio.sleep(POLL)
                continue
            done, _ = await asyncio.wait(running.values(), timeout=POLL, return_when=asyncio.FIRST_COMPLETED)
            ran = [finished.result() for finished in done]  # a store failure stops the run here
            for task_id in [k for k, v in running.items() if v.done()]:
                del running[task_id]
            if done and all(task is None for task in ran):
                await asyncio.sleep(POLL)  # held elsewhere: look again in a moment
    finally:
        for pending in running.values():
            pending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*running.values(), return_exceptions=True)
