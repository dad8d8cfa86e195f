"""A plain synchronous script that uses every verb of `SyncRuntime`; prints what each gave as one JSON line.

test_sync_runtime.py copies it into a project directory and runs it as
``python sync_script.py STORE_URL``, as a person runs a script: no event
loop of its own, no ``asyncio`` anywhere. The workflows are defined here, in
the script (a worker finds them as ``sync_script.py:NAME``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import ratchet


@ratchet.tool(risk="external_action")  # waits for a person's approval
def send(to: str) -> dict[str, str]:
    return {"sent_to": to}


@ratchet.workflow(tools=[send])
async def mail(ctx: ratchet.Context, to: str) -> Any:
    return await ctx.call_tool("send", {"to": to})


@ratchet.workflow
async def asks(ctx: ratchet.Context, question: str) -> str:
    return await ctx.ask_user(question)


@ratchet.workflow
async def double(ctx: ratchet.Context, n: int) -> int:
    return n * 2


@ratchet.workflow
async def sleeps(ctx: ratchet.Context, seconds: float) -> str:
    await ctx.sleep(seconds)
    return "woke"


def main(url: str) -> dict[str, Any]:
    said: dict[str, Any] = {}
    with ratchet.SyncRuntime(url) as rt:
        done = rt.run(double, {"n": 21})
        said["run"] = [done.status.value, done.result]

        waiting = rt.run(mail, {"to": "ops@example.com"})
        said["approval"] = waiting.status_text
        rt.approve(waiting.id)
        said["approved"] = rt.resume(waiting.id).result

        asked = rt.run(asks, {"question": "Which region?"})
        said["question"] = asked.status_text
        rt.answer(asked.id, "eu-west-1")
        said["answered"] = rt.resume(asked.id).result

        queued = rt.submit(double, {"n": 4}, name="for the worker")
        worker = subprocess.run(
            [sys.executable, "-m", "ratchet", "worker", "--store", url, "--until-idle"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        said["worker"] = worker.returncode
        said["waited"] = rt.wait(queued, timeout=60).result

        timer = rt.run(sleeps, {"seconds": 3600})
        said["timer"] = timer.status_text
        cancelled = rt.cancel(timer.id, reason="not needed")
        said["cancelled"] = [cancelled.status.value, cancelled.error]

        said["got"] = rt.get_task(done.id).result
        said["completed"] = [task.name for task in rt.list_tasks(status="completed")]
        said["newest"] = [task.id for task in rt.list_tasks(newest_first=True, limit=1)] == [timer.id]
        try:
            rt.submit(double, {"n": "many"})
        except ratchet.InvalidInputs as refused:
            said["refused"] = refused.message
        said["tasks"] = len(rt.list_tasks())
    return said


if __name__ == "__main__":  # not when a worker imports this file for its workflows
    print(json.dumps(main(sys.argv[1])))
