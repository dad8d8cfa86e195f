"""Workflows with typed inputs and results, loaded by reference (``tests.runtime.flows:NAME``).

Each returns what it was given as it received it (types named), so a test
sees the values a run gets after its inputs were checked.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel

from ratchet import Context, workflow

FLOWS = "tests.runtime.flows"


class Order(BaseModel):
    sku: str
    quantity: int


class Receipt(BaseModel):
    sku: str
    total_cents: int
    at: dt.datetime


class Plain:
    """A class of the program's own that pydantic has no schema for."""


@workflow
async def double(ctx: Context, n: int) -> int:
    return n * 2


@workflow
async def typed(ctx: Context, n: int, ratio: float = 1.0, tags: list[str] | None = None) -> dict[str, Any]:
    """Says the type of each input as the run got it."""
    return {
        "n": [n, type(n).__name__],
        "ratio": [ratio, type(ratio).__name__],
        "tags": tags,
    }


@workflow
async def checkout(ctx: Context, order: Order, when: dt.datetime) -> Receipt:
    """Takes a model and a time as inputs, returns a model."""
    assert isinstance(order, Order), type(order)
    assert isinstance(when, dt.datetime), type(when)
    return Receipt(sku=order.sku, total_cents=order.quantity * 250, at=when)


@workflow
async def open_ended(ctx: Context, n: int, **more: Any) -> dict[str, Any]:
    """Any key beyond `n` is welcome."""
    return {"n": n, "more": more}


@workflow
async def untyped(ctx, anything, odd: Plain | None = None):  # type: ignore[no-untyped-def]
    """No annotations to check (and one pydantic cannot check): any value goes."""
    return {"anything": anything, "odd": odd}


@workflow
async def starts_child(ctx: Context, n: Any) -> Any:
    """Starts `double` with whatever `n` it was given."""
    return await ctx.run_child(double, {"n": n})


@workflow
async def asks(ctx: Context, question: str) -> str:
    return await ctx.ask_user(question)
