"""A script whose run a person stops with Ctrl-C, then resumes (test_sync_runtime.py sends the SIGINT).

``python interrupt_script.py STORE_URL FLAG_FILE``: prints the task's id,
runs it until Ctrl-C, says what the task is then, and resumes it to the end.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import ratchet


@ratchet.workflow
async def waits_for_flag(ctx: ratchet.Context, flag: str) -> str:
    while not Path(flag).exists():  # runs (holding its lease) until the flag file appears
        await asyncio.sleep(0.05)
    return "flag seen"


if __name__ == "__main__":  # not when the runtime imports this file again for the task's code
    url, flag = sys.argv[1:]
    with ratchet.SyncRuntime(url) as rt:
        task_id = rt.submit(waits_for_flag, {"flag": flag}, queue=False)
        print(task_id, flush=True)
        try:
            rt.resume(task_id)
        except KeyboardInterrupt:
            print("interrupted", rt.get_task(task_id).status_text, flush=True)
        Path(flag).touch()
        print(rt.resume(task_id).result, flush=True)
