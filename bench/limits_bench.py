"""Limits shared by every worker: 3 worker processes x 40 tasks against a model server limited to N a window.

A real OpenAI-compatible server on loopback (``tests/helpers/limited_server.py``)
answers at most N requests in any sliding window of W seconds (60 by
default: a provider's minute) and refuses more with 429 + Retry-After. The
store holds the model's limit as ``rpm = N * 60 / W`` (``ratchet limit set``);
3 ``ratchet worker`` processes run 40 one-call tasks each
(``tests.engine.limited_flows:ask``). Printed: the most requests the server
answered in any window (target: at most N), the requests it refused, the
tasks that did not complete (target: none), and the throughput from the
first answer to the last as a ratio of the limit (target: within 10 %,
i.e. at least 0.90).

A real minute takes about ``3 * 40 / N`` minutes; ``--window 3 --limit 20``
tries it in seconds. ``--store postgresql`` runs the workers on a throwaway
PostgreSQL cluster (as bench/scale_bench.py does) instead of a SQLite file.

Run: ``python bench/limits_bench.py [--limit N] [--window S] [--workers 3] [--tasks 40]
[--concurrency 10] [--store sqlite|postgresql]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from ratchet.records import Limit, TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import open_store

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the tests' loopback server, workflows and throwaway cluster
from tests.helpers.limited_server import LimitedServer  # noqa: E402 (after the path above)

MODEL = "openai:limited"
FLOW = "tests.engine.limited_flows:ask"
TIME_LIMIT_FACTOR = 3.0  # the run may take this many times what the limit allows before giving up


@contextlib.contextmanager
def store_url(kind: str, workdir: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{workdir / 'ratchet.db'}"
        return
    from tests.helpers.pg import throwaway_cluster

    with throwaway_cluster() as cluster:
        yield cluster.create_database(empty=True)


def start_workers(
    url: str, count: int, concurrency: int, workdir: Path, env: dict[str, str]
) -> list[subprocess.Popen[bytes]]:
    workers = []
    for n in range(count):
        log = (workdir / f"w{n + 1}.log").open("wb")
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", "ratchet", "worker", "--store", url, "--name", f"w{n + 1}",
                 "--concurrency", str(concurrency), "--poll", "0.2", "--allow-code", FLOW.split(":")[0]],
                cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        )  # fmt: skip
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


async def submit(url: str, rpm: int, count: int) -> list[str]:
    store = await open_store(url)
    try:
        await store.set_limit(Limit(key=MODEL, rpm=rpm))
        rt = Runtime(store)
        return [await rt.submit(FLOW, {"prompt": f"task {n}"}, model=MODEL) for n in range(count)]
    finally:
        await store.close()


async def wait_for(url: str, task_ids: list[str], give_up: float) -> dict[str, int]:
    store = await open_store(url)
    try:
        wanted = set(task_ids)
        while True:
            # One listing every 2 s: this process serves the model too, and must not keep it waiting.
            tasks = [task for task in await store.list_tasks() if task.id in wanted]
            ended = [task for task in tasks if task.status.is_terminal]
            if len(ended) == len(wanted) or time.monotonic() > give_up:
                counts: dict[str, int] = {}
                for task in tasks:
                    counts[task.status_text] = counts.get(task.status_text, 0) + 1
                return counts
            await asyncio.sleep(2.0)
    finally:
        await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--limit", type=int, default=60, help="requests the server answers a window (N)")
    parser.add_argument("--window", type=float, default=60.0, help="the server's window, in seconds (W)")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=40, help="tasks per worker")
    parser.add_argument("--concurrency", type=int, default=10, help="tasks each worker runs at once")
    parser.add_argument("--store", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args()
    rpm = int(args.limit * 60 / args.window)  # rounded down: never more than the server allows
    count = args.workers * args.tasks
    print(
        f"server: {args.limit} requests per {args.window:g} s window; limit set: {MODEL} rpm {rpm}; "
        f"{args.workers} workers x {args.tasks} tasks (concurrency {args.concurrency} each); "
        f"store: {args.store}"
    )
    with (
        tempfile.TemporaryDirectory(prefix="ratchet-limits-bench-") as tmp,
        LimitedServer(limit=args.limit, window=args.window) as server,
        store_url(args.store, Path(tmp)) as url,
    ):
        workdir = Path(tmp)
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-bench",
            "XDG_STATE_HOME": str(workdir / "state"),
        }
        os.environ["XDG_STATE_HOME"] = env["XDG_STATE_HOME"]  # the tasks' seal: the workers' key
        task_ids = asyncio.run(submit(url, rpm, count))
        workers = start_workers(url, args.workers, args.concurrency, workdir, env)
        try:
            give_up = time.monotonic() + TIME_LIMIT_FACTOR * count * 60 / rpm + 60
            statuses = asyncio.run(wait_for(url, task_ids, give_up))
        finally:
            stop_workers(workers)
        accepted = sorted(server.accepted)
        most = server.most_in_a_window()
        span = accepted[-1] - accepted[0] if len(accepted) > 1 else 0.0
        rate = (len(accepted) - 1) / span if span else 0.0
        ratio = rate / (args.limit / args.window)
        print(f"tasks: {statuses}")
        print(f"requests answered: {len(accepted)}; refused (429): {len(server.refused)}")
        print(f"most answered in any {args.window:g} s window: {most} (limit {args.limit}): "
              f"{'ok' if most <= args.limit else 'OVER'}")  # fmt: skip
        print(f"throughput, first answer to last: {rate * 60:.2f}/min over {span:.1f} s = "
              f"{ratio:.3f} x the limit ({'ok' if ratio >= 0.9 else 'under 0.90'})")  # fmt: skip
        failed = count - statuses.get(str(TaskStatus.COMPLETED), 0)
        print(f"tasks not completed: {failed}")
        if failed:
            for log in sorted(workdir.glob("w*.log")):
                print(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}")


if __name__ == "__main__":
    main()
