"""Workflows whose tasks the task page shows, loaded by reference (``tests.helpers.task_page_flows:NAME``).

They make real journals through the real runtime: `many_calls` as many calls
as asked (clock reads, in steps, with a durable sleep or a wait for a message
between two steps if asked), `travels` an agent state that changes from
checkpoint to checkpoint, `greets` one tool call a step (the second reads its
input, so a fork after the first step with another input differs there),
`stumbles` a failure in a later step, `family` a tree of child tasks.
`run_here` runs one to its end in this process, `on_store` any work with a
`Runtime`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ratchet import Context, tool, workflow
from ratchet.engine.children import Child
from ratchet.records import Task, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import store_from_url

FLOWS = "tests.helpers.task_page_flows"
T = TypeVar("T")


@tool(idempotent=True)
async def echo(text: str, nested: dict[str, Any]) -> dict[str, Any]:
    """Give its input back, and how long its text was."""
    return {"length": len(text), "text": text, "nested": nested}


@workflow(tools=[echo])
async def many_calls(
    ctx: Context, count: int, steps: int = 1, pause: float = 0.0, hold: bool = False, payload: int = 0
) -> int:
    """`count` clock reads in `steps` steps; between the first two steps a sleep of `pause` seconds,
    or with `hold` a wait for a message ``more``; with `payload`, one call first whose input holds a
    `payload`-character text (longer than any preview)."""
    if payload:
        await ctx.call_tool("echo", {"text": "x" * payload, "nested": {"numbers": [1, 2, 3]}})
    per_step = max(count // steps, 1)
    made = 0
    for step in range(steps):
        async with ctx.step(f"part {step + 1}"):
            for _ in range(per_step if step < steps - 1 else count - made):
                await ctx.now()
                made += 1
        if step == 0 and pause:
            await ctx.sleep(pause)
        if step == 0 and hold:
            await ctx.receive("more")
    return made


@workflow(tools=[echo])
async def greets(ctx: Context, who: str) -> list[Any]:
    """Two steps, one `echo` each; only the second reads `who`."""
    async with ctx.step("hello"):
        hello = await ctx.call_tool("echo", {"text": "hello", "nested": {}})
    async with ctx.step("greet"):
        greeting = await ctx.call_tool("echo", {"text": who, "nested": {}})
    return [hello, greeting]


@workflow()
async def travels(ctx: Context, city: str) -> str:
    """Two steps, each changing the agent state (a checkpoint after each); the result names `city`."""
    async with ctx.step("learn"):
        await ctx.apply_patch(
            {
                "ops": [
                    {"op": "append_facts", "facts": [{"key": "city", "value": city}]},
                    {"op": "add_open_questions", "questions": ["which date?"]},
                ]
            }
        )
    async with ctx.step("decide"):
        await ctx.apply_patch(
            {
                "ops": [
                    {"op": "append_facts", "facts": [{"key": "city", "value": city.upper()}]},
                    {"op": "append_facts", "facts": [{"key": "date", "value": "2030-05-01"}]},
                    {"op": "resolve_question", "question": "which date?"},
                    {"op": "set_risk_flag", "flag": "costly"},
                ]
            }
        )
    return f"going to {city}"


@workflow()
async def leaf(ctx: Context, label: str) -> str:
    """One clock read; returns its label."""
    await ctx.now()
    return label


@workflow()
async def family(ctx: Context, depth: int, width: int) -> list[Any]:
    """`width` children, each a family of `depth - 1` levels below it (a leaf at depth 1)."""
    if depth <= 1:
        return [await ctx.run_child(leaf, {"label": "leaf"}, name="leaf")]
    below = [
        Child(family, {"depth": depth - 1, "width": width}, name=f"level {depth - 1}") for _ in range(width)
    ]
    return await ctx.run_children(below)


@workflow()
async def stumbles(ctx: Context, steps: int, failing: int) -> None:
    """`steps` steps of one clock read each; step `failing` (from 1) raises after its read."""
    for number in range(1, steps + 1):
        async with ctx.step(f"stage {number}"):
            await ctx.now()
            if number == failing:
                raise RuntimeError(f"stage {number} broke")


def on_store(store: str, work: Callable[[Runtime], Awaitable[T]]) -> T:
    """Do `work` with a `Runtime` over `store`, in a thread and event loop of its own (the caller may
    be inside an event loop: Playwright's sync API runs one)."""

    async def run() -> T:
        async with store_from_url(store) as opened:
            return await work(Runtime(opened))

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, run()).result()


def run_here(store: str, name: str, inputs: dict[str, Any], *, wake_after: float = 0.0) -> Task:
    """Run the workflow `name` of this module on `store` until it ends; a task that sleeps is resumed
    `wake_after` seconds later, one that waits on its children is waited for."""

    async def run(rt: Runtime) -> Task:
        task = await rt.run(f"{FLOWS}:{name}", inputs)
        while not task.status.is_terminal:
            if task.waiting_on == "timer":
                await asyncio.sleep(wake_after)
                task = await rt.resume(task.id)
            else:
                task = await rt.wait(task.id)
        return task

    task = on_store(store, run)
    assert task.status in (TaskStatus.COMPLETED, TaskStatus.FAILED), task
    return task
