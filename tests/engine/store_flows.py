"""A workflow whose side effect is followed by a full disk, for the tests of a store that fails mid-task.

Loaded by reference (``tests.engine.store_flows:deliveries``). Its tool
records an effect in a `Ledger` under the call's idempotency key (once per
key, as a service honouring keys would), then, the first time only (while
the ``fill_marker`` file exists), fills the disk the store lives on, and
returns a long text, which the journal must store: the write that meets the
full disk. ``fails_on_a_full_disk`` fills it just before it fails, so the
write that meets it is the one recording the failure.
"""

from __future__ import annotations

from pathlib import Path

from ratchet.engine import workflow
from ratchet.engine.context import Context
from ratchet.tools import ToolContext, tool

from ..helpers.disk import fill_disk
from ..helpers.ledger import Ledger

REFERENCE = "tests.engine.store_flows:deliveries"
FAILING = "tests.engine.store_flows:fails_on_a_full_disk"


@tool
def deliver(call: ToolContext, ledger: str, parcel: str, disk: str, fill_marker: str, leave: int) -> str:
    """Deliver a parcel (once per key); the first time, the disk fills up just after."""
    Ledger(ledger).effect_once("deliver", call.idempotency_key, parcel)
    marker = Path(fill_marker)
    if marker.exists():
        marker.unlink()
        fill_disk(Path(disk), leave=leave)
    return f"delivered {parcel}: " + "x" * 400_000


@workflow(tools=[deliver])
async def deliveries(ctx: Context, ledger: str, disk: str, fill_marker: str, leave: int) -> list[str]:
    """Two steps, one delivery each."""
    done = []
    for parcel in ("first", "second"):
        async with ctx.step(parcel):
            arguments = {"ledger": ledger, "parcel": parcel, "disk": disk, "fill_marker": fill_marker}
            said = await ctx.call_tool("deliver", {**arguments, "leave": leave})
            done.append(str(said)[: len(f"delivered {parcel}")])
    return done


@workflow
async def fails_on_a_full_disk(ctx: Context, disk: str, fill_marker: str) -> None:
    """Fails; the first time, the disk fills up just before, so its failure cannot be recorded.

    Its error is long, so that recording it needs room (a page cap leaves
    the room a short one needs in the pages the database has).
    """
    marker = Path(fill_marker)
    if marker.exists():
        marker.unlink()
        fill_disk(Path(disk))
    raise ValueError("the workflow's own failure " + "x" * 100_000)
