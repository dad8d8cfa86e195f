"""Workflows that start child tasks, for the child task tests (``tests.engine.child_flows:NAME``).

Children write to the same ledger as `tests.engine.flows`; `occupy` also
marks in a file when it enters and leaves, so a test reads how many children
ran at once (`most_at_once`).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from ratchet import Context
from ratchet.agent import Agent
from ratchet.engine import workflow
from ratchet.engine.children import Child
from ratchet.errors import OperationFailed
from ratchet.policy import Budget
from ratchet.tools import tool

from .flows import FAST, crash_once, keyed, record, slow

HERE = "tests.engine.child_flows"


@tool(idempotent=True)
async def occupy(marks: str, seconds: float) -> None:
    """Hold for `seconds`, marking entry (``+``) and exit (``-``) in the file `marks`."""
    with Path(marks).open("a") as out:
        out.write("+\n")
    await asyncio.sleep(seconds)
    with Path(marks).open("a") as out:
        out.write("-\n")


def most_at_once(marks: str) -> int:
    """The most `occupy` calls that were inside at the same time."""
    now = most = 0
    for line in Path(marks).read_text().split():
        now += 1 if line == "+" else -1
        most = max(most, now)
    return most


@tool
async def fail(message: str) -> None:
    raise RuntimeError(message)


TOOLS = [record, crash_once, occupy, fail, keyed, slow]


@workflow(tools=TOOLS, retry=FAST)
async def leaf(ctx: Context, ledger: str, label: str, marks: str = "", seconds: float = 0.0) -> str:
    """One effect (and a stay in `occupy` when given marks); returns its label."""
    if marks:
        await ctx.call_tool("occupy", {"marks": marks, "seconds": seconds})
    await ctx.call_tool("record", {"ledger": ledger, "label": label})
    return label


@workflow(tools=TOOLS, retry=FAST)
async def failing_leaf(ctx: Context) -> None:
    await ctx.call_tool("fail", {"message": "the child broke"})


@workflow(tools=TOOLS, retry=FAST)
async def stepping_leaf(ctx: Context, steps: int) -> int:
    """Runs `steps` steps (each counts toward the budgets)."""
    for index in range(steps):
        async with ctx.step(f"step {index + 1}"):
            pass
    return steps


@workflow(tools=TOOLS, retry=FAST)
async def one_child(ctx: Context, ledger: str) -> Any:
    """start + wait, then a crash point (the first run dies after the child is started)."""
    child_id = await ctx.start_child(f"{HERE}:leaf", {"ledger": ledger, "label": "child"})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "parent-crash"})
    result = await ctx.wait_child(child_id)
    again = await ctx.run_child(leaf, {"ledger": ledger, "label": "second"}, name="second child")
    return {"child_id": child_id, "result": result, "again": again}


@workflow(tools=TOOLS, retry=FAST)
async def gathered(ctx: Context, ledger: str) -> list[Any]:
    """Three run_child under asyncio.gather; the first takes longest."""
    marks = str(Path(ledger).with_suffix(".marks"))
    return list(
        await asyncio.gather(
            ctx.run_child(leaf, {"ledger": ledger, "label": "a", "marks": marks, "seconds": 0.3}),
            ctx.run_child(leaf, {"ledger": ledger, "label": "b"}),
            ctx.run_child(leaf, {"ledger": ledger, "label": "c", "marks": marks, "seconds": 0.1}),
        )
    )


@workflow(tools=TOOLS, retry=FAST)
async def fan_out(
    ctx: Context, ledger: str, marks: str, count: int, limit: int, seconds: float = 0.2
) -> list[Any]:
    children = [
        Child(leaf, {"ledger": ledger, "label": f"child-{i}", "marks": marks, "seconds": seconds})
        for i in range(count)
    ]
    return await ctx.run_children(children, max_concurrency=limit)


@workflow(tools=TOOLS, retry=FAST)
async def catches_failure(ctx: Context) -> str:
    try:
        await ctx.run_child(failing_leaf)
    except OperationFailed as failed:
        return failed.error
    return "no failure"


@workflow(tools=TOOLS, retry=FAST)
async def waits_long(ctx: Context, ledger: str, marks: str) -> Any:
    return await ctx.run_children(
        [
            Child(leaf, {"ledger": ledger, "label": f"long-{i}", "marks": marks, "seconds": 30})
            for i in range(2)
        ]
    )


@workflow(tools=TOOLS, retry=FAST)
async def spends(ctx: Context) -> None:
    """Under max_steps=3: a child of 2 steps, one of 2 more (given 1 step), then one more child."""
    await ctx.run_child(stepping_leaf, {"steps": 2})
    with contextlib.suppress(OperationFailed):  # carry on: then no step is left for another child
        await ctx.run_child(stepping_leaf, {"steps": 2})
    await ctx.start_child(stepping_leaf, {"steps": 1})


BUDGET = Budget(max_steps=3)


@workflow(tools=TOOLS, retry=FAST)
async def agent_child(ctx: Context, model: str) -> Any:
    """An agent as the child: it plans and acts on the instruction, with its own model."""
    helper = Agent(name="helper", model=model)
    return await ctx.run_child(helper, instruction="make X fast again")


@workflow(tools=TOOLS, retry=FAST)
async def keyed_leaf(ctx: Context, ledger: str, label: str, seconds: float) -> str:
    """A slow idempotent call (a window for kills), then one effect under its idempotency key."""
    await ctx.call_tool("slow", {"ledger": ledger, "label": f"{label}-slow", "seconds": seconds})
    return str(await ctx.call_tool("keyed", {"ledger": ledger, "label": label}))


@workflow(tools=TOOLS, retry=FAST)
async def tree(ctx: Context, ledger: str, name: str, count: int, limit: int, seconds: float) -> list[Any]:
    """`count` keyed children, at most `limit` at once; their idempotency keys, in order."""
    children = [
        Child(keyed_leaf, {"ledger": ledger, "label": f"{name}-{i}", "seconds": seconds})
        for i in range(count)
    ]
    return await ctx.run_children(children, max_concurrency=limit)


@workflow(tools=TOOLS, retry=FAST)
async def talker(ctx: Context) -> str:
    """One model call (its script says what it cost)."""
    answer = await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": "hi"}]})
    return str(answer.content)


@workflow(tools=TOOLS, retry=FAST)
async def token_parent(ctx: Context, model: str) -> None:
    """Two children that each spend 100 tokens, under a parent's 150."""
    await ctx.run_child(talker, model=model)
    await ctx.run_child(talker, model=model)
