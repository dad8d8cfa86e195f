"""What spend caps cost a model call on SQLite: the check before it and the count with its record.

A workflow makes N priced model calls (the scripted model, each answer with
``usage.cost`` set) on a SQLite file, three ways, interleaved in each
repetition after a warm-up:

- ``without``: the spend caps' code bypassed (the check before a live call
  and the count in the call's transaction replaced by nothing): the baseline;
- ``no cap``: as shipped, with no cap in the store (every deployment that sets
  none pays this);
- ``capped``: as shipped, with a cap covering the task's agent, one covering
  its label, and 50 other caps.

Each figure is the median over the repetitions of the time per model call.

Run: ``python bench/spend_caps_bench.py [--calls N] [--repeats R]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import ratchet.engine.context.context as context_module
import ratchet.engine.journal.task_journal as journal_module
from ratchet import Context, Runtime
from ratchet.engine import workflow
from ratchet.records import CapScope, SpendCap

ORIGINAL_CHECK = context_module.check_spend_caps
ORIGINAL_PRICED = journal_module._priced


@workflow
async def asks(ctx: Context, calls: int) -> int:
    """Asks the task's model `calls` times."""
    for turn in range(calls):
        await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": f"turn {turn}"}]})
    return calls


async def _nothing(*args: Any) -> None:
    return None


def _bypassed(on: bool) -> None:
    context_module.check_spend_caps = _nothing if on else ORIGINAL_CHECK  # type: ignore[assignment]
    journal_module._priced = (lambda op: 0.0) if on else ORIGINAL_PRICED  # type: ignore[assignment]


async def per_call(directory: Path, calls: int, *, bypass: bool, caps: bool) -> float:
    """Seconds per model call of one task of `calls` calls, on a fresh SQLite file."""
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "cost": 0.0001}
    script = directory / f"script-{time.perf_counter_ns()}.json"
    script.write_text(json.dumps({"act": [{"content": "ok", "usage": usage}] * calls}))
    url = f"sqlite:///{directory / f'bench-{time.perf_counter_ns()}.db'}"
    async with Runtime(url) as runtime:
        if caps:
            await runtime.store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name="asks", daily=1e6))
            await runtime.store.set_spend_cap(SpendCap(scope=CapScope.LABEL, name="team=bench", daily=1e6))
            for n in range(50):
                other = SpendCap(scope=CapScope.AGENT, name=f"other-{n}", daily=1.0)
                await runtime.store.set_spend_cap(other)
        _bypassed(bypass)
        try:
            began = time.perf_counter()
            model = f"scripted:{script}"
            task = await runtime.run(asks, {"calls": calls}, model=model, labels={"team": "bench"})
            elapsed = time.perf_counter() - began
        finally:
            _bypassed(False)
        assert task.status == "completed", task.error
    return elapsed / calls


async def main(calls: int, repeats: int) -> None:
    ways = {"without": (True, False), "no cap": (False, False), "capped": (False, True)}
    figures: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory() as temporary:
        directory = Path(temporary)
        for bypass, caps in ways.values():  # a warm-up of each
            await per_call(directory, 20, bypass=bypass, caps=caps)
        for _ in range(repeats):
            for name, (bypass, caps) in ways.items():
                figures[name].append(await per_call(directory, calls, bypass=bypass, caps=caps))
    base = statistics.median(figures["without"])
    print(f"python {platform.python_version()}: {calls} priced calls a task, {repeats} repeats, medians")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"{name:>8}: {median * 1e6:7.1f} us a call = {median / base:.2f}x the baseline")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.repeats))
