"""The workflow the ride-along crash tests kill: one call whose result may ride, then a read-only call.

`ride_flow` calls `first` (one of `pay`, keyed; `hold_seat`, idempotent;
`log_line`, neither), then `watch`, a read-only tool: it writes no intent, so
nothing of the task commits between `first` returning and `watch` running.
The first time `watch` runs it leaves a marker file and waits for the test to
SIGKILL its worker: the kill lands after `first` returned and before the
task's next commit, where a result riding along is not yet written
(docs/durability.md, "Results that ride along"). Later runs see the marker
and return at once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import ratchet
from ratchet import ToolContext

from ..helpers.ledger import Ledger
from .flows import derived_key

WATCH_HOLD = 60.0  # seconds the first `watch` waits: the test kills its worker long before


@ratchet.tool(risk="write_local")
def pay(amount: int, ledger: str, call: ToolContext) -> dict[str, Any]:
    """Pay `amount`, under the call's idempotency key."""
    book = Ledger(ledger)
    book.invoked("pay", call.idempotency_key)
    return book.effect_once("pay", call.idempotency_key, {"paid": amount})


@ratchet.tool(risk="write_local", idempotent=True)
def hold_seat(seat: str, ledger: str) -> dict[str, Any]:
    """Hold `seat` (holding it again changes nothing)."""
    key = derived_key("hold_seat", seat=seat)
    book = Ledger(ledger)
    book.invoked("hold_seat", key)
    return book.effect_once("hold_seat", key, {"held": seat})


@ratchet.tool(risk="write_local")
def log_line(entry: str, ledger: str) -> dict[str, Any]:
    """Append `entry` to a log (neither idempotent nor keyed)."""
    key = derived_key("log_line", entry=entry)
    book = Ledger(ledger)
    book.invoked("log_line", key)
    return book.append_effect("log_line", key, {"logged": entry})


@ratchet.tool(risk="read_only")
def watch(marker: str) -> str:
    """The first time: leave `marker` and wait to be killed. Later: return at once."""
    path = Path(marker)
    if not path.exists():
        path.write_text("watching", encoding="utf-8")
        time.sleep(WATCH_HOLD)
    return "watched"


FIRST_CALLS: dict[str, dict[str, Any]] = {
    "pay": {"amount": 42},
    "hold_seat": {"seat": "12A"},
    "log_line": {"entry": "seat 12A paid"},
}


@ratchet.workflow(tools=[pay, hold_seat, log_line, watch])
async def ride_flow(ctx: ratchet.Context, first: str, ledger: str, marker: str) -> dict[str, Any]:
    done = await ctx.call_tool(first, {**FIRST_CALLS[first], "ledger": ledger})
    seen = await ctx.call_tool("watch", {"marker": marker})
    return {"first": done, "seen": seen}
