"""How much Python a journaled tool call runs: function calls per call, counted, not timed.

On a 2-core machine shared with other work the per-call timings of
bench/durable_bench.py move by half their value from one run to the next
(the same code measured 183 to 295 us of CPU per side-effect call in four
runs), so they cannot tell whether a change made the hot path dearer by a
tenth. The number of Python and C function calls a journaled call makes does
not move at all: this script counts them, in every thread, with
`sys.setprofile` and `threading.setprofile`, for the workflow of
bench/durable_bench.py run with N and with N + 1000 calls on a SQLite file;
the difference divided by 1000 is the cost of one call, free of the run's
start and end. Compare two checkouts by running it in each.

Run: ``python bench/call_count.py [--top K]`` (``--top`` lists the K functions called most per call)
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import durable_bench  # a sibling script, importable once its folder is on the path
import ratchet

BASE, EXTRA = 200, 1000

_counts: collections.Counter[str] = collections.Counter()


def _count(frame: FrameType, event: str, arg: Any) -> None:
    if event == "call":
        code = frame.f_code
        _counts[f"{code.co_filename.rsplit('/src/', 1)[-1]}:{code.co_name}"] += 1
    elif event == "c_call":
        _counts[f"C:{getattr(arg, '__qualname__', arg)}"] += 1


async def _run(url: str, ops: int, tool: str) -> None:
    async with ratchet.Runtime(url) as runtime:
        task = await runtime.run(durable_bench.loop, {"ops": ops, "tool": tool})
    assert task.status == "completed", task.error


def _counted(ops: int, tool: str) -> collections.Counter[str]:
    _counts.clear()
    with tempfile.TemporaryDirectory() as workdir:
        threading.setprofile(_count)
        sys.setprofile(_count)
        try:
            asyncio.run(_run(f"sqlite:///{workdir}/count.db", ops, tool))
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    return _counts.copy()


def per_call(tool: str) -> dict[str, float]:
    """Calls of each function per journaled call of `tool`."""
    base, more = _counted(BASE, tool), _counted(BASE + EXTRA, tool)
    return {name: (more[name] - base.get(name, 0)) / EXTRA for name in more}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--top", type=int, default=0, help="list the K functions called most per call")
    args = parser.parse_args()
    print(f"ratchet at {Path(ratchet.__file__).parent}, python {sys.version.split()[0]}")
    tools = (("noop", "side-effect call (intent + result)"), ("lookup", "read-only call (result only)"))
    for tool, what in tools:
        calls = per_call(tool)
        python = sum(n for name, n in calls.items() if not name.startswith("C:"))
        builtin = sum(n for name, n in calls.items() if name.startswith("C:"))
        print(f"{what:36s} {python:6.1f} Python calls + {builtin:5.1f} C calls")
        for name, n in sorted(calls.items(), key=lambda item: -item[1])[: args.top]:
            print(f"    {n:6.1f}  {name}")


if __name__ == "__main__":
    main()
