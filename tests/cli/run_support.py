"""The scripted runs of the `ratchet run` tests: a tools file that keeps a ledger, and model scripts.

Every effect of a tool is one ledger line, written once per idempotency key,
and every call of a tool is logged, so a test sees both what happened and how
often a tool ran.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

TOOLS = """
import asyncio
import json
from pathlib import Path

import ratchet

HERE = Path(__file__).parent


def _effect(tool, key, entry):
    with (HERE / "calls.jsonl").open("a") as calls:
        calls.write(json.dumps({"tool": tool, "key": key, "entry": entry}) + "\\n")
    ledger = HERE / "ledger.jsonl"
    done = [json.loads(line)["key"] for line in ledger.read_text().splitlines()] if ledger.exists() else []
    if key not in done:
        with ledger.open("a") as out:
            out.write(json.dumps({"key": key, "entry": entry}) + "\\n")


@ratchet.tool
def record(entry: str, ctx: ratchet.ToolContext) -> str:
    \"\"\"Write an entry in the ledger.\"\"\"
    _effect("record", ctx.idempotency_key, entry)
    return f"recorded {entry}"


@ratchet.tool
async def record_slowly(entry: str, seconds: float, ctx: ratchet.ToolContext) -> str:
    \"\"\"Write an entry in the ledger, then take `seconds` more.\"\"\"
    _effect("record_slowly", ctx.idempotency_key, entry)
    await asyncio.sleep(seconds)
    return f"recorded {entry}"
"""


def plan(*steps: str, check: str = "") -> dict[str, Any]:
    """A plan entry: one step per name, each checked by `check` (none if empty)."""
    return {
        "content": {
            "goal": "keep the ledger",
            "steps": [
                {
                    "step_name": name,
                    "description": f"record {name}",
                    "action_instruction": f"record {name}",
                    "validation_instruction": check,
                }
                for name in steps
            ],
        }
    }


def acts(entry: str, *, tool: str = "record", delay: float = 0.0, **args: Any) -> list[dict[str, Any]]:
    """A step's act entries: one tool call, then a report (after `delay` seconds)."""
    report: dict[str, Any] = {"content": f"recorded {entry}"}
    if delay:
        report["delay"] = delay
    return [{"tool_calls": [{"name": tool, "arguments": {"entry": entry, **args}}]}, report]


def script(
    directory: Path,
    *,
    act: list[dict[str, Any]],
    steps: tuple[str, ...] = ("a", "b"),
    check: str = "the entry is in the ledger",
) -> str:
    """Write the model's script; return the --model value (relative to the directory run runs in)."""
    (directory / "script.json").write_text(
        json.dumps(
            {
                "plan": [plan(*steps, check=check)],
                "act": act,
                "verify": [{"content": {"passed": True, "reason": "it is there"}}] * len(steps),
            }
        )
    )
    return "scripted:script.json"


def read_terminal(fd: int) -> str:
    """Everything a program wrote to the pseudo-terminal `fd` until it ended; closes `fd`."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError as error:  # the program closed its end
            if error.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")
