"""What a RatchetAgent run costs beside the plain pydantic-ai run of the same agent.

One agent (pydantic-ai's `FunctionModel`, no network) books N items, one
tool call per model request, so a run makes N + 1 model requests and N tool
calls (2N + 1 journaled operations, each tool call with an intent and a
result commit). Measured in the same run, each the median of ``--repeat``
runs: the plain ``agent.run``, and ``RatchetAgent.run`` as a task of its own
on a memory store and on a SQLite file (default durability). Printed: ms per
run and its ratio to the plain run, split into what a run costs by itself
(a run with no tool call: its task made, its store opened) and what each
further journaled operation adds (the slope between 0 and N calls).
There is no target: the figures say what durability costs a pydantic-ai user.

Run: ``python bench/pydantic_ai_bench.py [--calls N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ratchet.integrations.pydantic_ai import RatchetAgent


def booking_agent(calls: int) -> Agent[Any, Any]:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        booked = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        if booked < calls:
            return ModelResponse(parts=[ToolCallPart("book", {"item": f"item-{booked}"}, f"call-{booked}")])
        return ModelResponse(parts=[TextPart(f"booked {booked}")])

    agent = Agent(FunctionModel(answer), name="bench-booker")

    @agent.tool_plain
    async def book(item: str) -> str:
        """Book an item (no effect: the bench measures the journal)."""
        return f"booked {item}"

    return agent


async def measure(calls: int, repeat: int, tmp: Path) -> dict[str, float]:
    """Median seconds per run of the agent making `calls` tool calls: plain, on memory, on SQLite.

    The three kinds take turns, run by run, so a change in the machine's load falls on all three.
    """
    agent = booking_agent(calls)
    on_memory = RatchetAgent(agent, store="memory://")
    on_sqlite = RatchetAgent(agent, store=f"sqlite:///{tmp / f'bench-{calls}.db'}")
    await on_sqlite.run("warm up", task_id="warm-up")  # the schema is made once, not timed
    runs: dict[str, Callable[[int], Awaitable[object]]] = {
        "plain": lambda i: agent.run("book"),
        "memory": lambda i: on_memory.run("book"),
        "sqlite": lambda i: on_sqlite.run("book", task_id=f"run-{i}"),
    }
    times: dict[str, list[float]] = {kind: [] for kind in runs}
    for i in range(repeat):
        for kind, run in runs.items():
            began = time.perf_counter()
            await run(i)
            times[kind].append(time.perf_counter() - began)
    return {kind: statistics.median(figures) for kind, figures in times.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="tool calls per run (default 20)")
    parser.add_argument("--repeat", type=int, default=15, help="runs per figure; the median is shown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        short = await measure(0, args.repeat, Path(tmp))  # one model request: the cost of a run itself
        long = await measure(args.calls, args.repeat, Path(tmp))
    ops = 2 * args.calls + 1
    print(
        f"pydantic-ai bridge: runs of 0 and {args.calls} tool calls (1 and {ops} journaled operations), "
        f"median of {args.repeat}; load average {os.getloadavg()[0]:.2f}"
    )
    print(f"  plain agent.run          {long['plain'] * 1000:8.1f} ms per run of {args.calls} calls")
    for kind, label in (("memory", "RatchetAgent, memory"), ("sqlite", "RatchetAgent, SQLite")):
        per_run = (short[kind] - short["plain"]) * 1000
        per_op = ((long[kind] - long["plain"]) - (short[kind] - short["plain"])) / (ops - 1) * 1e6
        print(
            f"  {label:24s} {long[kind] * 1000:8.1f} ms per run ({long[kind] / long['plain']:4.1f}x plain): "
            f"{per_run:5.1f} ms per run (a task, its store opened) + {per_op:5.0f} us per operation"
        )


if __name__ == "__main__":
    asyncio.run(main())
