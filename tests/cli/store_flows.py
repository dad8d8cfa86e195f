"""A workflow during which the PostgreSQL store becomes read-only, for the CLI tests of a failing store.

Loaded by path (``/abs/.../store_flows.py:deliveries``) in the `ratchet`
subprocesses, so it imports nothing from the tests. Its tool records an
effect in a JSON-lines ledger once per idempotency key; the first time
(while the ``marker`` file exists) it then turns the whole server read-only,
as an operator (or a failover to a standby) would: every session's next
transaction is read-only, and the journal write of the tool's result fails.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg

import ratchet

SETTLE = 0.5  # seconds for every server process to take the new setting


def set_read_only(admin_url: str, read_only: bool) -> None:
    """Make every transaction of the server read-only (or writable again) from now on."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("SET default_transaction_read_only = off")  # this session may still change it
        if read_only:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        conn.execute("SELECT pg_reload_conf()")
    time.sleep(SETTLE)


@ratchet.tool
def deliver(parcel: str, ledger: str, admin_url: str, marker: str, call: ratchet.ToolContext) -> str:
    """Deliver a parcel (once per key); the first time, the server turns read-only just after."""
    book = Path(ledger)
    done = [json.loads(line)["key"] for line in book.read_text().splitlines()] if book.exists() else []
    if call.idempotency_key not in done:
        with book.open("a") as out:
            out.write(json.dumps({"key": call.idempotency_key, "parcel": parcel}) + "\n")
    if Path(marker).exists():
        Path(marker).unlink()
        set_read_only(admin_url, True)
    return f"delivered {parcel}"


@ratchet.workflow(tools=[deliver])
async def deliveries(ctx: ratchet.Context, ledger: str, admin_url: str, marker: str) -> list[str]:
    """Two steps, one delivery each."""
    done = []
    for parcel in ("first", "second"):
        async with ctx.step(parcel):
            arguments = {"parcel": parcel, "ledger": ledger, "admin_url": admin_url, "marker": marker}
            done.append(str(await ctx.call_tool("deliver", arguments)))
    return done
