"""A stand-in for ``ratchet resume``, for a tree whose CLI can't resume (run as a module).

    python -m tests.crash.driver STORE_URL TASK_ID [--lease-ttl SECONDS]

Resumes the task once with `Runtime.resume`, until it ends or waits, and exits
as ``ratchet resume`` does: 0 completed, 1 failed or cancelled, 3 waits on a
person, 4 waits on a timer, 2 can't be resumed. `harness.worker_command`
chooses between the two.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from ratchet import CannotResume, Runtime, Task, TaskStatus


def exit_code(task: Task) -> int:
    if task.status is TaskStatus.COMPLETED:
        return 0
    if task.status.is_terminal:
        return 1
    assert task.waiting_on is not None, f"resume left task {task.id} {task.status_text}"
    return 3 if task.waiting_on.needs_person else 4


async def resume(store_url: str, task_id: str, lease_ttl: float) -> Task:
    async with Runtime(store_url, lease_ttl=lease_ttl) as runtime:
        return await runtime.resume(task_id)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.crash.driver")
    parser.add_argument("store_url")
    parser.add_argument("task_id")
    parser.add_argument("--lease-ttl", type=float, default=3.0)
    args = parser.parse_args()
    try:
        task = asyncio.run(resume(args.store_url, args.task_id, args.lease_ttl))
    except CannotResume as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    print(task.status_text)
    return exit_code(task)


if __name__ == "__main__":
    sys.exit(main())
