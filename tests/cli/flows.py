"""Workflows the CLI tests run; tasks refer to them by this file's path.

Loaded by path (``/abs/.../flows.py:name``) in the test process and in the
`ratchet` subprocesses alike, so it imports nothing from the tests.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import ratchet
from ratchet.records import Constraints, HumanInTheLoop

UNATTENDED = Constraints(human_in_the_loop=HumanInTheLoop(required_for_risk_levels=[]))


@ratchet.tool(risk="read_only")
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


@ratchet.tool(risk="external_action")
def send_email(to: str, subject: str) -> dict[str, str]:
    """Send an email: neither idempotent nor keyed, so a crash mid-call leaves it in doubt."""
    return {"sent_to": to, "subject": subject}


@ratchet.tool(idempotent=True)
async def linger(marker: str, seconds: float) -> str:
    """Add a line to `marker` (so a test knows the call began, and how often), then take `seconds`."""
    with Path(marker).open("a") as out:
        out.write("began\n")
    await asyncio.sleep(seconds)
    return "lingered"


@ratchet.workflow(tools=[shout])
async def greet(ctx: ratchet.Context, who: str) -> dict[str, str]:
    """One step, one read-only tool."""
    async with ctx.step("greet"):
        loud = await ctx.call_tool("shout", {"text": f"hello {who}"})
    return {"greeting": str(loud)}


@ratchet.workflow(tools=[shout])
async def three_steps(ctx: ratchet.Context) -> list[str]:
    """Three steps, so three checkpoints to rotate or fork from."""
    said = []
    for word in ("one", "two", "three"):
        async with ctx.step(word):
            said.append(str(await ctx.call_tool("shout", {"text": word})))
    return said


@ratchet.workflow(tools=[shout])
async def hello_then_greet(ctx: ratchet.Context, who: str) -> list[str]:
    """Two steps; only the second reads `who`, so a fork after the first may change it."""
    async with ctx.step("hello"):
        hello = str(await ctx.call_tool("shout", {"text": "hello"}))
    async with ctx.step("greet"):
        greeting = str(await ctx.call_tool("shout", {"text": who}))
    return [hello, greeting]


@ratchet.workflow(tools=[send_email])
async def notify(ctx: ratchet.Context, to: str) -> dict[str, object]:
    """Sends one email; the tool call is what the in-doubt tests leave in flight.

    It runs unattended: no risk level waits for a person's approval.
    """
    ctx.state = ctx.state.model_copy(update={"constraints": UNATTENDED})
    async with ctx.step("send"):
        sent = await ctx.call_tool("send_email", {"to": to, "subject": "deployed"})
    return {"email": sent}


@ratchet.workflow
async def breaks(ctx: ratchet.Context) -> None:
    """Fails at once."""
    raise ValueError("the disk is full")


@ratchet.workflow
async def fails_with(ctx: ratchet.Context, message: str) -> None:
    """Fails at once, with `message` (whatever a tool or a model might have said)."""
    raise ValueError(message)


@ratchet.workflow
async def naps(ctx: ratchet.Context) -> str:
    """Sleeps durably for an hour: waits on a timer."""
    await ctx.sleep(3600)
    return "rested"


@ratchet.workflow(tools=[linger])
async def lingers(ctx: ratchet.Context, marker: str, seconds: float) -> str:
    """Holds its worker inside one long tool call."""
    return str(await ctx.call_tool("linger", {"marker": marker, "seconds": seconds}))


@ratchet.workflow(tools=[linger, shout])
async def lingers_then_shouts(ctx: ratchet.Context, marker: str, seconds: float) -> str:
    """One long tool call, then a quick one: a worker stopping in the first must not start the second."""
    await ctx.call_tool("linger", {"marker": marker, "seconds": seconds})
    return str(await ctx.call_tool("shout", {"text": "done"}))


@ratchet.tool(risk="external_action")
def post(channel: str, text: str, ledger: str) -> dict[str, str]:
    """Post to a channel (an external effect, so it waits for approval); appends to `ledger`."""
    with Path(ledger).open("a") as out:
        out.write(f"{channel}: {text}\n")
    return {"posted_to": channel}


@ratchet.workflow(tools=[post])
async def announce(ctx: ratchet.Context, channel: str, ledger: str) -> dict[str, object]:
    """Posts one announcement; a denied post is reported in the result."""
    async with ctx.step("announce"):
        try:
            post = {"channel": channel, "text": "deployed", "ledger": ledger}
            posted = await ctx.call_tool("post", post)
            assert isinstance(posted, dict)
            return dict(posted)
        except ratchet.OperationFailed as failed:
            return {"not_posted": failed.error}


@ratchet.workflow
async def asks_region(ctx: ratchet.Context) -> str:
    """Asks a person one question and returns the answer."""
    return await ctx.ask_user("Which region?")


@ratchet.workflow
async def receiver(ctx: ratchet.Context, count: int = 1) -> list[object]:
    """Receive `count` messages named ``item`` (`ratchet send TASK item JSON`)."""
    return [await ctx.receive("item") for _ in range(count)]
