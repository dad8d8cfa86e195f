"""Workflows the metrics tests run: model calls (priced by their script) and tool calls, one failing.

Loaded by path (``/abs/.../metrics_flows.py:name``) in the test process and in
the `ratchet` subprocesses alike, so it imports nothing from the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ratchet
from ratchet.policy import RetryPolicy

FLOWS = Path(__file__)
ONCE = RetryPolicy(maximum_attempts=1)
TWICE = RetryPolicy(maximum_attempts=2, initial_interval=0.01)


def flow(name: str) -> str:
    """The reference of a workflow of this file."""
    return f"{FLOWS}:{name}"


def priced(cost: float, turns: int) -> dict[str, Any]:
    """A scripted model's script whose every answer uses 10 input and 5 output tokens, costing `cost`."""
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "cost": cost}
    return {"act": [{"content": f"answer {n}", "usage": usage} for n in range(turns)]}


def unavailable_first(script: dict[str, Any]) -> dict[str, Any]:
    """`script`, its first answer a 503 (tried again at once)."""
    return {"act": [{"error": {"status": 503, "retry_after": 0.01}}, *script["act"]]}


@ratchet.tool(risk="read_only")
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


@ratchet.tool(risk="read_only", retry=ONCE)
def refuse(text: str) -> str:
    """Fail, always."""
    raise ValueError(f"refused {text}")


@ratchet.workflow(tools=[shout, refuse], retry=TWICE)
async def asks_then_shouts(ctx: ratchet.Context, times: int = 2) -> list[Any]:
    """Asks the task's model `times` times, shouts, and has one tool call fail (which it survives)."""
    answers = []
    for turn in range(times):
        message = {"role": "user", "content": f"turn {turn}"}
        answers.append((await ctx.call_model({"purpose": "act", "messages": [message]})).content)
    answers.append(await ctx.call_tool("shout", {"text": "done"}))
    try:
        await ctx.call_tool("refuse", {"text": "this"})
    except ratchet.OperationFailed:
        answers.append("refused")
    return answers
