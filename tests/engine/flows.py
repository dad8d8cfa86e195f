"""Workflows and tools for the engine tests, loaded by reference (``tests.engine.flows:NAME``).

Every tool writes what it did to a ledger, a JSON-lines file whose path the
workflow receives as its ``ledger`` input, so a test can count exactly which
side effects happened, in any Runtime, however many times a task was resumed.
A tool simulates a crash of its worker by raising `Crash`, a BaseException
that the engine must pass through without recording anything: the run stops
where it is, its lease is released, and whatever the journal held at that
moment is what a resume finds.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

from ratchet import Context
from ratchet.engine import workflow
from ratchet.errors import NonRetryableError, OperationFailed
from ratchet.policy import CheckpointPolicy, CheckpointStrategy, RetryPolicy
from ratchet.records import OpKind
from ratchet.tools import Reconciled, ToolContext, tool

FLOWS = "tests.engine.flows"
FAST = RetryPolicy(initial_interval=0.01, maximum_attempts=5)


class Crash(BaseException):
    """The worker process 'dies' here: nothing after this point is recorded."""


# --------------------------------------------------------------------------- the ledger


def entries(ledger: str | Path, label: str | None = None) -> list[dict[str, Any]]:
    """The ledger's entries (those of one label when given), in the order they were written."""
    path = Path(ledger)
    if not path.exists():
        return []
    found = [json.loads(line) for line in path.read_text().splitlines() if line]
    return [e for e in found if label is None or e["label"] == label]


def _write(ledger: str, label: str, **fields: Any) -> int:
    """Append an entry; return how many entries of `label` there are now."""
    with Path(ledger).open("a") as out:
        out.write(json.dumps({"label": label, **fields}) + "\n")
    return len(entries(ledger, label))


# --------------------------------------------------------------------------- tools


@tool
async def record(ledger: str, label: str, delay: float = 0.0) -> dict[str, Any]:
    """A side effect with no crash declaration; returns a value that differs on every run."""
    if delay:
        await asyncio.sleep(delay)
    _write(ledger, label)
    return {"label": label, "nonce": uuid.uuid4().hex}


@tool
async def other(ledger: str, label: str) -> str:
    _write(ledger, label)
    return label


@tool(idempotent=True)
async def crash_once(ledger: str, label: str) -> str:
    """Crashes the run the first time it is called, then succeeds; writes no intent row."""
    if _write(ledger, label) == 1:
        raise Crash(label)
    return label


@tool
async def keyed(
    ctx: ToolContext, ledger: str, label: str, fail_times: int = 0, crash_first: bool = False
) -> str:
    """Takes its idempotency key; fails `fail_times` attempts, or crashes its first run."""
    count = _write(ledger, label, key=ctx.idempotency_key, attempt=ctx.attempt, seq=ctx.seq)
    if crash_first and count == 1:
        raise Crash(label)
    if ctx.attempt <= fail_times:
        raise ValueError(f"attempt {ctx.attempt} of {label} fails")
    return ctx.idempotency_key


@tool(idempotent=True)
async def idem(ctx: ToolContext, ledger: str, label: str) -> str:
    _write(ledger, label, key=ctx.idempotency_key, attempt=ctx.attempt)
    return label


@tool
async def plain_crash(ledger: str, label: str) -> dict[str, str]:
    """No declaration at all: its effect happens, then the run crashes (the first time)."""
    if _write(ledger, label) == 1:
        raise Crash(label)
    return {"ran": label}


def _verdict(label: str) -> Any:
    def reconcile(ctx: ToolContext) -> Reconciled:
        if label == "done":
            return Reconciled.done({"reconciled": ctx.idempotency_key})
        if label == "run_again":
            return Reconciled.run_again()
        return Reconciled.ask_person()

    return reconcile


async def _reconciled_effect(ledger: str, label: str) -> dict[str, str]:
    if _write(ledger, label) == 1:
        raise Crash(label)
    return {"ran": label}


reconcile_done = tool(name="reconcile_done", reconcile=_verdict("done"))(_reconciled_effect)
reconcile_again = tool(name="reconcile_again", reconcile=_verdict("run_again"))(_reconciled_effect)
reconcile_ask = tool(name="reconcile_ask", reconcile=_verdict("ask"))(_reconciled_effect)


@tool(idempotent=True)
async def flaky(ctx: ToolContext, ledger: str, label: str, fail_times: int = 2, crash_at: int = 0) -> int:
    """Fails its first `fail_times` calls (ValueError); the `crash_at`-th call crashes."""
    count = _write(ledger, label, attempt=ctx.attempt)
    if count == crash_at:
        raise Crash(label)
    if count <= fail_times:
        raise ValueError(f"call {count} of {label} fails")
    return ctx.attempt


@tool(retry=RetryPolicy(initial_interval=0.01, maximum_attempts=5, non_retryable_error_types=("KeyError",)))
async def key_error(ledger: str, label: str) -> None:
    _write(ledger, label)
    raise KeyError(label)


@tool(retry=FAST)
async def refuses(ledger: str, label: str) -> None:
    _write(ledger, label)
    raise NonRetryableError(f"{label} can never work")


@tool(retry=RetryPolicy(initial_interval=0.01, maximum_attempts=2))
async def always_fails(ledger: str, label: str) -> None:
    _write(ledger, label)
    raise ValueError(f"{label} always fails")


@tool(idempotent=True, retry=RetryPolicy(initial_interval=20.0, maximum_attempts=5))
async def patient(ctx: ToolContext, ledger: str, label: str) -> int:
    """Waits 20 s between attempts, were it ever to fail; records the attempt it runs as."""
    _write(ledger, label, attempt=ctx.attempt)
    return ctx.attempt


@tool(idempotent=True, retry=RetryPolicy(initial_interval=60.0, maximum_attempts=3))
async def fails_slowly(ledger: str, label: str) -> None:
    """Fails; the next attempt is due a minute later."""
    _write(ledger, label)
    raise ValueError(f"{label} fails")


@tool(idempotent=True)
async def slow(ledger: str, label: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    _write(ledger, label)
    return label


@tool(idempotent=True, timeout=0.2, retry=RetryPolicy(maximum_attempts=1))
async def slow_with_timeout(ledger: str, label: str, seconds: float) -> str:
    await asyncio.sleep(seconds)
    _write(ledger, label)
    return label


@tool(idempotent=True)
async def noop(i: int) -> None:
    return None


@tool(idempotent=True)
async def shout(text: str) -> str:
    return text


ALL_TOOLS = [
    record,
    other,
    crash_once,
    keyed,
    idem,
    plain_crash,
    reconcile_done,
    reconcile_again,
    reconcile_ask,
    flaky,
    patient,
    fails_slowly,
    key_error,
    refuses,
    always_fails,
    slow,
    slow_with_timeout,
    noop,
    shout,
]


# --------------------------------------------------------------------------- workflows


@workflow(tools=ALL_TOOLS, retry=FAST)
async def sequence(ctx: Context, ledger: str) -> dict[str, Any]:
    """Two effects, a clock and a uuid, then a crash point, then one more effect."""
    a = await ctx.call_tool("record", {"ledger": ledger, "label": "a"})
    b = await ctx.call_tool("record", {"ledger": ledger, "label": "b"})
    now = await ctx.now()
    made = await ctx.uuid()
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    c = await ctx.call_tool("record", {"ledger": ledger, "label": "c"})
    return {"a": a, "b": b, "now": now.isoformat(), "uuid": made, "c": c}


@workflow(tools=ALL_TOOLS, retry=FAST)
async def parallel(ctx: Context, ledger: str) -> list[Any]:
    """The first call finishes last; then a crash point."""
    results = await ctx.call_tools(
        [
            ("record", {"ledger": ledger, "label": "first", "delay": 0.3}),
            ("record", {"ledger": ledger, "label": "second"}),
            ("record", {"ledger": ledger, "label": "third", "delay": 0.1}),
        ]
    )
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return results


@workflow(tools=ALL_TOOLS, retry=FAST)
async def chooses(ctx: Context, ledger: str, choice_file: str) -> str:
    """Not deterministic on purpose: the tool at seq 0 is named by a file."""
    name = Path(choice_file).read_text().strip()
    await ctx.call_tool(name, {"ledger": ledger, "label": name})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return name


@workflow(tools=ALL_TOOLS, retry=FAST)
async def call_one(ctx: Context, ledger: str, tool_name: str, args: dict[str, Any] | None = None) -> Any:
    """Calls one tool (after a warm-up effect at seq 0) and returns its result."""
    await ctx.call_tool("record", {"ledger": ledger, "label": "warmup"})
    return await ctx.call_tool(tool_name, {"ledger": ledger, "label": tool_name, **(args or {})})


@workflow(tools=ALL_TOOLS, retry=FAST)
async def first_call(ctx: Context, ledger: str, tool_name: str) -> Any:
    """Calls one tool at seq 0 and returns its result."""
    return await ctx.call_tool(tool_name, {"ledger": ledger, "label": tool_name})


@workflow(retry=FAST)
async def ask_model(ctx: Context, count: int = 1) -> list[Any]:
    """Asks the model `count` times (purpose act); returns the answers' contents."""
    answers = []
    for i in range(count):
        response = await ctx.call_model(
            {"purpose": "act", "messages": [{"role": "user", "content": f"go {i}"}]}
        )
        answers.append(response.content)
    return answers


@workflow(tools=ALL_TOOLS, retry=FAST)
async def stepped(
    ctx: Context, ledger: str, steps: int = 3, step_timeout: float | None = None, seconds: float = 0.0
) -> int:
    """`steps` steps, each one effect; with `seconds`, each effect is that slow."""
    for i in range(steps):
        async with ctx.step(f"s{i}", timeout=step_timeout):
            if seconds:
                await ctx.call_tool("slow", {"ledger": ledger, "label": f"s{i}", "seconds": seconds})
            else:
                await ctx.call_tool("record", {"ledger": ledger, "label": f"s{i}"})
    return steps


@workflow(tools=ALL_TOOLS, retry=FAST)
async def crash_in_step(ctx: Context, ledger: str) -> int:
    """The worker dies in the middle of step 1 (the second)."""
    for i in range(3):
        async with ctx.step(f"s{i}"):
            await ctx.call_tool("record", {"ledger": ledger, "label": f"s{i}"})
            if i == 1:
                await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return 3


@workflow(tools=ALL_TOOLS, retry=FAST)
async def recovers_from_a_failed_step(ctx: Context, ledger: str) -> str:
    """Step 0 fails and the workflow carries on without it; then a crash point."""
    outcome = "s0 ok"
    try:
        async with ctx.step("s0"):
            await ctx.call_tool("always_fails", {"ledger": ledger, "label": "s0"})
    except OperationFailed:
        outcome = "s0 failed"
    async with ctx.step("s1"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "s1"})
        await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return outcome


@workflow(tools=ALL_TOOLS, retry=FAST)
async def slow_calls(
    ctx: Context, ledger: str, tool_name: str = "slow", seconds: float = 1.0, times: int = 1
) -> str:
    for i in range(times):
        await ctx.call_tool(tool_name, {"ledger": ledger, "label": f"{tool_name}{i}", "seconds": seconds})
    return "done"


@workflow(retry=FAST, checkpoint=CheckpointPolicy(strategy=CheckpointStrategy.EVERY_ITERATION))
async def iterating(ctx: Context, count: int = 3) -> int:
    for i in range(count):
        await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": f"go {i}"}]})
    return count


@workflow(checkpoint=CheckpointPolicy(strategy=CheckpointStrategy.ON_STATE_CHANGE))
async def patching(ctx: Context) -> list[str]:
    await ctx.apply_patch({"ops": [{"op": "append_facts", "facts": [{"key": "k1", "value": 1}]}]})
    await ctx.apply_patch({"ops": [{"op": "add_open_questions", "questions": ["why?"]}]})
    return [f.key for f in ctx.state.known_facts]


@workflow(tools=ALL_TOOLS, retry=FAST)
async def models_with_crash(ctx: Context, ledger: str, before: int = 1, after: int = 1) -> list[Any]:
    """`before` model calls, a crash point, then `after` more."""
    answers = []
    for i in range(before + after):
        if i == before:
            await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
        response = await ctx.call_model(
            {"purpose": "act", "messages": [{"role": "user", "content": f"go {i}"}]}
        )
        answers.append(response.content)
    return answers


@workflow(tools=ALL_TOOLS, checkpoint=CheckpointPolicy(strategy=CheckpointStrategy.ON_STATE_CHANGE))
async def patch_crash_patch(ctx: Context, ledger: str, steps: int = 0) -> dict[str, Any]:
    """`steps` steps, a fact, a crash point, another fact; returns what the state holds."""
    for i in range(steps):
        async with ctx.step(f"s{i}"):
            await ctx.call_tool("record", {"ledger": ledger, "label": f"s{i}"})
    await ctx.apply_patch({"ops": [{"op": "append_facts", "facts": [{"key": "before", "value": 1}]}]})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    await ctx.apply_patch({"ops": [{"op": "append_facts", "facts": [{"key": "after", "value": 2}]}]})
    return {"facts": [f.key for f in ctx.state.known_facts], "risk_flags": list(ctx.state.risk_flags)}


@workflow(tools=ALL_TOOLS, checkpoint=CheckpointPolicy(keep=2))
async def stepped_keep_two(ctx: Context, ledger: str) -> int:
    for i in range(4):
        async with ctx.step(f"s{i}"):
            await ctx.call_tool("record", {"ledger": ledger, "label": f"s{i}"})
    return 4


@workflow(tools=ALL_TOOLS, checkpoint=CheckpointPolicy(max_age=0.3))
async def sleeps_after_step(ctx: Context, ledger: str, seconds: float = 60.0) -> str:
    async with ctx.step("before"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "before"})
    await ctx.sleep(seconds)
    return "woke"


@workflow(tools=ALL_TOOLS)
async def sleeper(ctx: Context, ledger: str, seconds: float = 0.5) -> str:
    await ctx.call_tool("record", {"ledger": ledger, "label": "before"})
    await ctx.sleep(seconds)
    await ctx.call_tool("record", {"ledger": ledger, "label": "after"})
    return "woke"


@workflow(tools=ALL_TOOLS)
async def many(ctx: Context, count: int) -> int:
    for i in range(count):
        await ctx.call_tool("noop", {"i": i})
    return count


# --------------------------------------------------------------------------- middleware


class Spy:
    """Writes every call it sees to the ledger of its task; upper-cases `shout`'s result."""

    async def __call__(self, call: Any, proceed: Any) -> Any:
        ledger = call.context.task.inputs_params["ledger"]
        _write(ledger, "spy", name=call.name, seq=call.seq, kind=str(call.kind))
        output = await proceed(call)
        if call.kind is OpKind.TOOL and call.name == "shout":
            return str(output).upper()
        return output


@workflow(tools=ALL_TOOLS, middleware=[Spy()])
async def spied(ctx: Context, ledger: str) -> dict[str, Any]:
    loud = await ctx.call_tool("shout", {"text": "quiet"})
    await ctx.call_tool("record", {"ledger": ledger, "label": "r"})
    answer = await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": "hi"}]})
    await ctx.call_tool("crash_once", {"ledger": ledger, "label": "crash"})
    return {"shout": loud, "answer": answer.content}


@tool(risk="read_only")
def exits(code: str) -> str:
    """A tool that ends the program it runs in, as a script's guard would."""
    raise SystemExit(code)


@workflow(tools=[exits], retry=FAST)
async def calls_an_exiting_tool(ctx: Context) -> str:
    return str(await ctx.call_tool("exits", {"code": "set API_KEY"}))


@workflow
async def exits_itself(ctx: Context) -> str:
    raise SystemExit("set API_KEY")


@tool(risk="read_only", retry=RetryPolicy(maximum_attempts=1))
def decodes_binary() -> str:
    raise ValueError("cannot decode b'\x00\x01' at 0")


@workflow(tools=[decodes_binary])
async def quotes_binary(ctx: Context) -> str:
    """A tool whose error quotes binary bytes, a NUL among them; the workflow goes on past it."""
    try:
        await ctx.call_tool("decodes_binary", {})
    except OperationFailed as failed:
        return type(failed).__name__
    return "no error"
