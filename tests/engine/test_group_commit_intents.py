"""With group commit on, many tasks' side-effect calls share commits, and each intent is still
committed before its tool runs: the tool looks for it from a connection of its own."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import psycopg

import ratchet
from ratchet.runtime import Runtime
from ratchet.tools import ToolContext

TASKS = 12
CALLS = 5


def _committed_status(url: str, task_id: str, seq: int) -> str | None:
    """The operation's status as another connection sees it: only what was committed."""
    query = "SELECT status FROM operations WHERE task_id = {0} AND seq = {0}"
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            row = conn.execute(query.format("?"), (task_id, seq)).fetchone()
    else:
        with psycopg.connect(url) as conn:
            row = conn.execute(query.format("%s"), (task_id, seq)).fetchone()
    return None if row is None else str(row[0])


@ratchet.tool(risk="write_local")
async def look(ctx: ToolContext, url: str) -> dict[str, Any]:
    """A side effect that first says what another connection sees of its own intent."""
    return {"seen": _committed_status(url, ctx.task_id, ctx.seq)}


@ratchet.workflow(tools=[look])
async def looking(ctx: ratchet.Context, url: str) -> list[Any]:
    return [await ctx.call_tool("look", {"url": url}) for _ in range(CALLS)]


async def test_each_intent_is_committed_before_its_tool_runs_while_tasks_share_commits(url: str) -> None:
    async with Runtime(f"{url}?group_commit=on") as rt:  # on PostgreSQL, grouping is opt-in
        groups = rt.store.groups
        assert groups is not None
        tasks = await asyncio.gather(*(rt.run(looking, {"url": url}) for _ in range(TASKS)))
        assert groups.commits < groups.members  # the tasks' writes did share commits

    for task in tasks:
        assert task.status == "completed", task.error
        assert task.result == [{"seen": "started"}] * CALLS
