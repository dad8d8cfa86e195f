"""A workflow whose tool returns a large result, loaded by reference (``tests.engine.result_flows:NAME``).

The tool writes a line to a ledger each time it runs, so a test can tell a
replayed result from a second run; the workflow returns a digest of what it
got, so a test can tell the value it was given on replay is the one given live.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ratchet import Context
from ratchet.engine import workflow
from ratchet.policy import RetryPolicy
from ratchet.tools import tool

from .flows import Crash

FLOWS = "tests.engine.result_flows"
FAST = RetryPolicy(initial_interval=0.01, maximum_attempts=2)


def payload(size: int, kind: str) -> Any:
    """The value `big` returns: `size` characters of text, or a JSON list about `size` bytes long."""
    if kind == "text":
        line = "GET /orders/42 200 12ms é\n"
        return (line * (size // len(line) + 1))[:size]
    return [{"n": i, "line": "GET /orders/42 200 12ms é"} for i in range(size // 40)]


def digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def runs(ledger: str, label: str) -> int:
    path = Path(ledger)
    return path.read_text().split().count(label) if path.exists() else 0


def _note(ledger: str, label: str) -> int:
    with Path(ledger).open("a") as out:
        out.write(label + "\n")
    return runs(ledger, label)


@tool(idempotent=True)
async def big(ledger: str, size: int, kind: str = "text") -> Any:
    _note(ledger, "big")
    return payload(size, kind)


@tool(idempotent=True)
async def after(ledger: str, crash: bool = False) -> str:
    """Runs after the big result; with `crash`, the worker "dies" here the first time."""
    if _note(ledger, "after") == 1 and crash:
        raise Crash("after")
    return "after"


@workflow(tools=[big, after], retry=FAST)
async def keeps_a_big_result(
    ctx: Context, ledger: str, size: int, kind: str = "text", crash: bool = False
) -> dict[str, Any]:
    value = await ctx.call_tool("big", {"ledger": ledger, "size": size, "kind": kind})
    await ctx.call_tool("after", {"ledger": ledger, "crash": crash})
    assert isinstance(value, str | list)
    return {"sha256": digest(value), "type": type(value).__name__, "length": len(value)}
