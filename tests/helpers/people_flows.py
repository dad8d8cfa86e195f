"""Workflows with a person in the loop, loaded by reference (``tests.helpers.people_flows:NAME``).

`send` is an ``external_action`` tool, so under the default constraints each
call waits for a person's approval; it writes every real send to a ledger (a
JSON-lines file) so a test counts exactly which effects happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ratchet import Context, OperationFailed, tool, workflow
from ratchet.tools import ToolContext


def sends(ledger: str | Path) -> list[dict[str, Any]]:
    """What `send` did, in order."""
    path = Path(ledger)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@tool(risk="external_action")
def send(ctx: ToolContext, ledger: str, to: str) -> dict[str, str]:
    """Send a message to `to` (an external effect)."""
    with Path(ledger).open("a") as out:
        out.write(json.dumps({"to": to, "key": ctx.idempotency_key}) + "\n")
    return {"sent_to": to}


@workflow(tools=[send])
async def mail(ctx: Context, ledger: str, to: str = "ops@example.com", times: int = 1) -> list[Any]:
    """Send `times` messages, one step each; a denied send is reported, not raised."""
    outcomes: list[Any] = []
    for n in range(times):
        async with ctx.step(f"send {n + 1}"):
            try:
                outcomes.append(await ctx.call_tool("send", {"ledger": ledger, "to": to}))
            except OperationFailed as failed:
                outcomes.append({"not_sent": failed.error, "error_type": failed.error_type})
    return outcomes


@workflow
async def asks(ctx: Context, question: str = "Which region?") -> dict[str, Any]:
    """Ask a person one question and return the answer with what the state then holds."""
    answer = await ctx.ask_user(question)
    return {"answer": answer, "open_questions": list(ctx.state.open_questions)}


@workflow(tools=[send])
async def mail_both(ctx: Context, ledger: str) -> list[Any]:
    """Two sends asked for at once (parallel calls), each needing its own approval."""
    calls = [("send", {"ledger": ledger, "to": to}) for to in ("a@example.com", "b@example.com")]
    return [
        outcome if not isinstance(outcome, OperationFailed) else outcome.error
        for outcome in await ctx.call_tools(calls)
    ]
