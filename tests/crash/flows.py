"""The workflow the crash tests kill, and its tools.

`order_flow` runs five steps that between them make every kind of call the
engine journals: model calls through the scripted model (one answer is a 503,
so a retry and its backoff happen; one answer is slow, so a kill can land
while the model "thinks"), a clock read, parallel tool calls, a keyed tool, an
idempotent tool, a read-only tool, a keyed tool whose first attempt fails, one
tool that is neither idempotent nor keyed, and a durable sleep. The sleep comes
late on purpose: a worker stops at it (``ratchet resume`` ends with the task
waiting on its timer), so every call before it runs in the first worker
process, where the crash points count their passes.

The tools record what they do in a `Ledger` (`tests.helpers.ledger`), the
outside world. A keyed or idempotent tool behaves like a service that honours
the key (an effect already recorded under it is not recorded again);
`append_audit` inserts blindly, so running it twice leaves two rows under one key.
"""

from __future__ import annotations

import json
import time
from typing import Any

import ratchet
from ratchet import RetryPolicy, ToolContext

from ..helpers.ledger import Ledger

TASK_ID = "crash-order"
ORDER = "A-17"
UNKEYED_TOOL = "append_audit"
# Tools whose raw calls may repeat after a crash: declared safe, or handed their key.
REPEATABLE_TOOLS = frozenset(
    {"read_inventory", "reserve_stock", "book_shipment", "charge_card", "send_notice"}
)
STEP_NAMES = ("plan", "check", "charge", "notify", "confirm")
# How long charge_card and append_audit take between being called and having acted:
# wide enough that a random kill sometimes lands in between.
CHARGE_LATENCY = 0.1
AUDIT_LATENCY = 0.3

SCRIPT: dict[str, Any] = {
    "plan": [
        {"error": {"status": 503}},
        {"content": {"sku": "SKU-7", "quantity": 2, "address": "1 Main St"}},
    ],
    "act": [
        {"delay": 0.3, "tool_calls": [{"name": "charge_card", "arguments": {"amount_cents": 4200}}]},
    ],
    "verify": [{"content": {"passed": True, "reason": "order recorded"}}],
}


def derived_key(tool: str, **args: Any) -> str:
    """The key an unkeyed tool's effect is recorded under: its name and arguments."""
    return f"{tool}:{json.dumps(args, sort_keys=True)}"


@ratchet.tool(risk="read_only")
def read_inventory(sku: str, ledger: str) -> dict[str, Any]:
    """How many units of `sku` are on hand."""
    Ledger(ledger).invoked("read_inventory", derived_key("read_inventory", sku=sku))
    return {"sku": sku, "on_hand": 7}


@ratchet.tool(risk="write_local", idempotent=True)
def reserve_stock(sku: str, quantity: int, ledger: str) -> dict[str, Any]:
    """Hold `quantity` units of `sku` (holding them again changes nothing)."""
    key = derived_key("reserve_stock", sku=sku, quantity=quantity)
    book = Ledger(ledger)
    book.invoked("reserve_stock", key)
    return book.effect_once("reserve_stock", key, {"sku": sku, "held": quantity})


@ratchet.tool(risk="write_local")
def book_shipment(address: str, ledger: str, call: ToolContext) -> dict[str, Any]:
    """Book a courier to `address`, under the call's idempotency key."""
    book = Ledger(ledger)
    book.invoked("book_shipment", call.idempotency_key)
    return book.effect_once("book_shipment", call.idempotency_key, {"shipment": f"to {address}"})


@ratchet.tool(risk="write_local")
def charge_card(amount_cents: int, ledger: str, call: ToolContext) -> dict[str, Any]:
    """Charge the customer, under the call's idempotency key."""
    book = Ledger(ledger)
    book.invoked("charge_card", call.idempotency_key)
    time.sleep(CHARGE_LATENCY)
    return book.effect_once("charge_card", call.idempotency_key, {"charged": amount_cents})


@ratchet.tool(risk="write_local", retry=RetryPolicy(initial_interval=0.3, maximum_attempts=5))
def send_notice(message: str, ledger: str, call: ToolContext) -> dict[str, Any]:
    """Send the customer a notice; the mail server turns the first attempt away."""
    book = Ledger(ledger)
    book.invoked("send_notice", call.idempotency_key)
    if call.attempt == 1:
        raise ConnectionError("mail server busy")
    return book.effect_once("send_notice", call.idempotency_key, {"sent": message})


@ratchet.tool(risk="write_local", idempotent=False)
def append_audit(entry: str, ledger: str) -> dict[str, Any]:
    """Append a line to the audit log (neither idempotent nor keyed)."""
    key = derived_key(UNKEYED_TOOL, entry=entry)
    book = Ledger(ledger)
    book.invoked(UNKEYED_TOOL, key)
    time.sleep(AUDIT_LATENCY)
    return book.append_effect(UNKEYED_TOOL, key, {"logged": entry})


def _ask(purpose: str, text: str) -> dict[str, Any]:
    return {"purpose": purpose, "messages": [{"role": "user", "content": text}]}


@ratchet.workflow(
    tools=[read_inventory, reserve_stock, book_shipment, charge_card, send_notice, append_audit],
    retry=RetryPolicy(initial_interval=0.2, maximum_attempts=4),
)
async def order_flow(ctx: ratchet.Context, order: str, ledger: str) -> dict[str, Any]:
    async with ctx.step("plan"):
        plan = (await ctx.call_model(_ask("plan", f"plan order {order}"))).content
        assert isinstance(plan, dict)
        await ctx.now()  # journaled, kept out of the result: it differs between runs
    async with ctx.step("check"):
        stock, held, shipment = await ctx.call_tools(
            [
                ("read_inventory", {"sku": plan["sku"], "ledger": ledger}),
                ("reserve_stock", {"sku": plan["sku"], "quantity": plan["quantity"], "ledger": ledger}),
                ("book_shipment", {"address": plan["address"], "ledger": ledger}),
            ]
        )
    async with ctx.step("charge"):
        answer = await ctx.call_model(_ask("act", f"charge for order {order}"))
        charges = [
            await ctx.call_tool(call.name, {**call.arguments, "ledger": ledger}) for call in answer.tool_calls
        ]
    async with ctx.step("notify"):
        notice = await ctx.call_tool(
            "send_notice", {"message": f"order {order} is on its way", "ledger": ledger}
        )
        audit = await ctx.call_tool(UNKEYED_TOOL, {"entry": f"order {order} shipped", "ledger": ledger})
    async with ctx.step("confirm"):
        await ctx.sleep(0.3)
        verdict = (await ctx.call_model(_ask("verify", f"check order {order}"))).content
    return {
        "order": order,
        "plan": plan,
        "stock": stock,
        "held": held,
        "shipment": shipment,
        "charges": charges,
        "notice": notice,
        "audit": audit,
        "verdict": verdict,
    }
