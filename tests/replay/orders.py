"""The workflow module the replay-check tests run for real, and the versions of it a change makes.

`ORDERS` is written to a file of the test's directory; its tools note each
call in a ledger file beside it, so a test sees that a check ran none. Each
variant is the same module after a change: two calls reordered, the reorder
behind ``ctx.patched``, a call dropped, another result.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from ratchet import Runtime

from ..helpers.raw_sql import run_sql

ORDERS = '''
from pathlib import Path

import ratchet

LEDGER = Path(__file__).with_name("ledger.txt")


def _note(what: str) -> None:
    with LEDGER.open("a") as out:
        out.write(what + "\\n")


@ratchet.tool(risk="read_only")
def price(item: str) -> int:
    """What an item costs (read-only: a replay would have no reason not to run it, and must not)."""
    _note(f"price {item}")
    return len(item) * 10


@ratchet.tool(risk="write_local")
def charge(order: str, amount: int) -> str:
    """Charge the order."""
    _note(f"charge {order}")
    return f"charged {amount}"


@ratchet.tool(risk="write_local")
def ship(order: str) -> str:
    """Ship the order."""
    _note(f"ship {order}")
    return f"shipped {order}"


@ratchet.workflow(tools=[price, charge, ship])
async def checkout(ctx: ratchet.Context, order: str, ask: bool = False) -> dict[str, object]:
    amount = await ctx.call_tool("price", {"item": order})
    charged = await ctx.call_tool("charge", {"order": order, "amount": amount})
    shipped = await ctx.call_tool("ship", {"order": order})
    rating = await ctx.ask_user(f"how was order {order}?") if ask else None
    return {"charged": charged, "shipped": shipped, "rating": rating}
'''

_CHARGE = '    charged = await ctx.call_tool("charge", {"order": order, "amount": amount})\n'
_SHIP = '    shipped = await ctx.call_tool("ship", {"order": order})\n'
_RETURN = '    return {"charged": charged, "shipped": shipped, "rating": rating}\n'

VARIANTS = {
    "recorded": ORDERS,
    "reordered": ORDERS.replace(_CHARGE + _SHIP, _SHIP + _CHARGE),
    "patched": ORDERS.replace(
        _CHARGE + _SHIP,
        '    if await ctx.patched("ship-first"):\n'
        f"    {_SHIP}    {_CHARGE}"
        "    else:\n"
        f"    {_CHARGE}    {_SHIP}",
    ),
    "no_ship": ORDERS.replace(_SHIP, '    shipped = "not shipped"\n'),
    "refund_after": ORDERS.replace(
        _RETURN, '    await ctx.call_tool("charge", {"order": order, "amount": 0})\n' + _RETURN
    ),
    "clock_after": ORDERS.replace(_RETURN, "    await ctx.now()\n" + _RETURN),
    "order_number": ORDERS.replace("order: str, ask: bool", "order: int, ask: bool"),
    "new_result": ORDERS.replace(_RETURN, '    return {"charged": charged, "shipped": shipped, "v": 2}\n'),
    "new_result_patched": ORDERS.replace(
        _RETURN,
        '    if await ctx.patched("v2"):\n'
        '        return {"charged": charged, "shipped": shipped, "v": 2}\n' + _RETURN,
    ),
    "swallows": ORDERS.replace(
        _CHARGE + _SHIP,
        _CHARGE
        + _SHIP
        + "    try:\n"
        + '        await ctx.call_tool("price", {"item": "extra"})\n'
        + "    except Exception:\n"
        + "        pass\n",
    ),
}
assert all(text != ORDERS for name, text in VARIANTS.items() if name != "recorded")


TEAM = """
import ratchet


@ratchet.workflow
async def reviewer(ctx: ratchet.Context, order: str) -> str:
    return await ctx.ask_user(f"approve order {order}?")


@ratchet.workflow
async def asks(ctx: ratchet.Context) -> str:
    answer = await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": "hello?"}]})
    return str(answer.content)


@ratchet.workflow
async def lead(ctx: ratchet.Context, order: str) -> object:
    return await ctx.run_child(reviewer, {"order": order})
"""


def write_orders(directory: Path, variant: str = "recorded", name: str = "orders.py") -> Path:
    """Write the module as `variant` has it to `directory`/`name`; return its path."""
    path = directory / name
    path.write_text(VARIANTS[variant], encoding="utf-8")
    return path


def ledger(directory: Path) -> list[str]:
    """The tool calls of the module written to `directory`, in order."""
    path = directory / "ledger.txt"
    return path.read_text().splitlines() if path.exists() else []


async def record_runs(url: str, module: Path) -> dict[str, str]:
    """Run `module`'s checkout into the store at `url`; the task ids by what became of each.

    Two complete, two wait for a person's answer (after their three calls),
    one is queued and never ran.
    """
    reference = f"{module}:checkout"
    ids: dict[str, str] = {}
    async with Runtime(url, allow_code=[module.parent]) as rt:
        for label, ask in (("done-1", False), ("asking-1", True), ("done-2", False), ("asking-2", True)):
            task = await rt.run(reference, {"order": label, "ask": ask}, task_id=label)
            ids[label] = task.id
        ids["queued"] = await rt.submit(reference, {"order": "queued"}, task_id="queued")
    return ids


def every_row(url: str) -> dict[str, list[str]]:
    """Every row of every table of the store at `url` (a SQLite file or a PostgreSQL database), sorted."""
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path)) as conn:
            tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {table: sorted(map(repr, conn.execute(f'SELECT * FROM "{table}"'))) for table in tables}
    listed = run_sql(url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    tables = [name for (name,) in listed]
    return {table: sorted(map(repr, run_sql(url, f'SELECT * FROM "{table}"'))) for table in tables}
