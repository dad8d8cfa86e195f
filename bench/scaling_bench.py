"""The ceiling of one PostgreSQL primary: tasks/s and journaled calls/s with 1, 2, 4 and 8 workers.

For each worker count W, on a fresh database of one throwaway cluster
(tests/helpers/pg.py, started with ``DURABLE_SETTINGS``: fsync,
synchronous_commit and full_page_writes on, so every commit waits for the
disk as in production), W real ``ratchet worker`` processes are started and
seen in the store's workers table; then M tasks of bench/scaling_flows.py's
``calls`` workflow (K calls each of a no-op tool with side effects: an intent
and a result committed per call, each fenced by the task's lease) are
submitted from this process. The figures run from the first submit to the
last task's completion (its ``updated_at``): tasks/s, and journaled calls/s
(M x K over the same span). Beside them: the CPU the workers and the server
used over that span (from /proc), as cores busy and per task, with the
tasks/s that all the machine's cores would give at that CPU per task (a
figure other processes on the machine move far less than the wall-clock
ones: they take cores, not CPU per task), and the ratio of each
figure to the 1-worker figure measured in the same run (the first count
given, whichever it is).

The ceiling found is that of the machine the bench runs on: workers, the
server and this process share its cores, so once they are all busy more
workers add nothing (docs/scaling.md says what that means for a deployment).
The load average is printed before and after: other processes move the figures.

Run by hand, never in CI:
``python bench/scaling_bench.py [--tasks M] [--calls K] [--workers 1,2,4,8] [--concurrency C]
[--group-commit on|off]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from pydantic import JsonValue

import ratchet
import scaling_flows
from ratchet import Workflow
from ratchet.store import open_store
from scale_bench import _counts, _cpu_model, _problems, _server_cpu

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import DURABLE_SETTINGS, Cluster, throwaway_cluster  # noqa: E402

BENCH = Path(__file__).resolve().parent
LEASE_TTL = 30
TIME_LIMIT = 300.0  # seconds per configuration before the bench gives up
STALLED = 60.0  # seconds without a task completing (a task refused its code waits for ever)
SUBMITTERS = 16  # submits in flight at once from this process


@dataclass(frozen=True)
class Run:
    """What one configuration did (times in seconds, from the first submit)."""

    label: str
    tasks: int
    calls: int  # journaled calls in all
    seconds: float  # first submit to last completion
    submit_seconds: float  # first submit to last submit returned
    workers_cpu: float
    server_cpu: float
    problems: list[str]

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.seconds

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.seconds

    @property
    def cores_busy(self) -> float:
        return (self.workers_cpu + self.server_cpu) / self.seconds

    @property
    def cpu_per_task(self) -> float:
        return (self.workers_cpu + self.server_cpu) / self.tasks

    @property
    def cores_bound(self) -> float:
        """Tasks/s if every core of the machine ran these workers and this server and nothing else."""
        return (os.cpu_count() or 1) / self.cpu_per_task


class Crew:
    """`ratchet worker` processes on one store, each logging to a file of its own."""

    def __init__(self, url: str, workdir: Path, label: str, count: int, concurrency: int) -> None:
        self.url = url
        self.logs = [workdir / f"{label}-w{number}.log" for number in range(1, count + 1)]
        env = {**os.environ, "RATCHET_HOME": str(workdir / "home")}
        self.processes: list[subprocess.Popen[bytes]] = []
        for log in self.logs:
            with log.open("wb") as out:
                command = [sys.executable, "-m", "ratchet", "worker", "--store", url, "--name", log.stem]
                command += ["--concurrency", str(concurrency), "--lease-ttl", str(LEASE_TTL)]
                self.processes.append(  # run from bench/, the project root that holds the flows
                    subprocess.Popen(command, cwd=BENCH, env=env, stdout=out, stderr=subprocess.STDOUT)
                )

    async def ready(self) -> None:
        """Wait until every worker has said it is there (its row in the workers table)."""
        store = await open_store(self.url, create=False)
        try:
            deadline = time.monotonic() + 60
            while len(await store.list_workers()) < len(self.processes):
                self.check()
                if time.monotonic() > deadline:
                    raise SystemExit(f"workers not all up after 60 s; logs: {self.logs[0].parent}")
                await asyncio.sleep(0.1)
        finally:
            await store.close()

    def check(self) -> None:
        for log, process in zip(self.logs, self.processes, strict=True):
            if process.poll() is not None:
                raise SystemExit(f"{log.stem} exited ({process.returncode}):\n{log.read_text()[-2000:]}")

    def cpu(self) -> float:
        """CPU seconds the workers have used so far."""
        return sum(_process_cpu(process.pid) for process in self.processes)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def submit(
    url: str,
    count: int,
    inputs: dict[str, JsonValue],
    *,
    workflow: Workflow = scaling_flows.calls,
    task_ids: Sequence[str] | None = None,
) -> None:
    """Submit `count` tasks of `workflow` (under `task_ids` when given), some at once."""
    gate = asyncio.Semaphore(SUBMITTERS)
    async with ratchet.Runtime(url) as runtime:

        async def one(number: int) -> None:
            async with gate:
                task_id = task_ids[number] if task_ids is not None else None
                await runtime.submit(workflow, inputs, task_id=task_id)

        await asyncio.gather(*(one(number) for number in range(count)))


async def finished(url: str, count: int, crews: Sequence[Crew]) -> float:
    """Wait until `count` tasks have completed; return the last one's completion (epoch seconds)."""
    store = await open_store(url, create=False)
    try:
        deadline = time.monotonic() + TIME_LIMIT
        progress, progressed = -1, time.monotonic()
        while True:
            statuses = await store.count_tasks_by_status()
            completed = statuses.get(ratchet.TaskStatus.COMPLETED, 0)
            if completed >= count:
                break
            if completed != progress:
                progress, progressed = completed, time.monotonic()
            elif time.monotonic() - progressed > STALLED:
                raise SystemExit(f"no task completed in {STALLED:g} s on {url}: {dict(statuses)}")
            ended_badly = {str(s): n for s, n in statuses.items() if str(s) in ("failed", "cancelled") and n}
            if ended_badly:
                raise SystemExit(f"tasks ended badly on {url}: {ended_badly}")
            for crew in crews:
                crew.check()
            if time.monotonic() > deadline:
                raise SystemExit(f"not done after {TIME_LIMIT:g} s: {dict(statuses)}")
            await asyncio.sleep(0.05)
        return max(task.updated_at.timestamp() for task in await store.list_tasks())
    finally:
        await store.close()


def measure(cluster: Cluster, workdir: Path, workers: int, args: argparse.Namespace) -> Run:
    """Start `workers` workers on a fresh database, then submit and time the tasks."""
    with cluster.database() as url:
        url = with_group_commit(url, args.group_commit)
        asyncio.run(create_schema(url))
        crew = Crew(url, workdir, f"{workers}w", workers, args.concurrency)
        try:
            asyncio.run(crew.ready())
            server_cpu, workers_cpu = _server_cpu(cluster), crew.cpu()
            began = time.time()
            asyncio.run(submit(url, args.tasks, {"count": args.calls}))
            submitted = time.time()
            last = asyncio.run(finished(url, args.tasks, [crew]))
            server_cpu, workers_cpu = _server_cpu(cluster) - server_cpu, crew.cpu() - workers_cpu
        finally:
            crew.stop()
    return Run(
        label=f"{workers} worker(s)",
        tasks=args.tasks,
        calls=args.tasks * args.calls,
        seconds=last - began,
        submit_seconds=submitted - began,
        workers_cpu=workers_cpu,
        server_cpu=server_cpu,
        problems=_problems(crew.logs),
    )


async def create_schema(url: str) -> None:
    """Make the store's schema before the workers start (each would otherwise race to make it)."""
    store = await open_store(url)
    await store.close()


def with_group_commit(url: str, setting: str) -> str:
    return url + ("&" if "?" in url else "?") + f"group_commit={setting}"


def print_run(run: Run, base: Run) -> None:
    print(
        f"  {run.label:<22} {run.tasks_per_s:8.1f} tasks/s {run.tasks_per_s / base.tasks_per_s:5.2f}x"
        f"   {run.calls_per_s:8.0f} calls/s {run.calls_per_s / base.calls_per_s:5.2f}x"
        f"   {run.seconds:6.2f} s (submits {run.submit_seconds:.2f} s)"
    )
    print(
        f"      cpu: workers {run.workers_cpu:.1f} s + server {run.server_cpu:.1f} s"
        f" = {run.cores_busy:.2f} of {os.cpu_count()} cores busy, {run.cpu_per_task * 1000:.1f} ms per task"
        f" (all {os.cpu_count()} cores would run {run.cores_bound:.0f} tasks/s);"
        f" worker logs: {len(run.problems)} warning/error lines"
    )
    for line in run.problems[:5]:
        print(f"      {line}")


def facts(cluster: Cluster) -> list[str]:
    with cluster.admin() as conn:
        shown = {
            name: next(iter(conn.execute(f"SHOW {name}").fetchone() or ("?",)))
            for name in ("server_version", "fsync", "synchronous_commit", "full_page_writes")
        }
    server = shown.pop("server_version")
    return [
        f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}",
        (
            f"python {platform.python_version()}, PostgreSQL {server}, psycopg {psycopg.__version__}, "
            f"{platform.system()} {platform.machine()}, {os.cpu_count()} cpus ({_cpu_model()}) shared by "
            "the workers, the server and this process"
        ),
        f"server: {', '.join(f'{k}={v}' for k, v in shown.items())} (commits wait for the disk)",
        f"load average {_load()} at the start",
    ]


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200, help="tasks per configuration (M)")
    parser.add_argument("--calls", type=int, default=20, help="journaled calls per task (K)")
    parser.add_argument(
        "--workers", type=_counts, default=[1, 2, 4, 8], help="worker counts (default 1,2,4,8)"
    )
    parser.add_argument("--concurrency", type=int, default=8, help="tasks each worker runs at once")
    parser.add_argument(
        "--group-commit", choices=["on", "off"], default="off", help="the store URL's group_commit"
    )
    args = parser.parse_args()
    if args.tasks < 1 or args.calls < 1:
        parser.error("--tasks and --calls must be at least 1")

    with throwaway_cluster(settings=DURABLE_SETTINGS) as cluster:
        print("\n".join(facts(cluster)))
        print(
            f"{args.tasks} tasks x {args.calls} calls of a no-op tool with side effects; workers with"
            f" --concurrency {args.concurrency}; group_commit={args.group_commit}; from the first submit"
            " to the last completion"
        )
        with tempfile.TemporaryDirectory(prefix="ratchet-scaling-bench-") as tmp:
            base: Run | None = None
            for workers in args.workers:
                run = measure(cluster, Path(tmp), workers, args)
                base = base or run
                print_run(run, base)
        print(f"load average {_load()} at the end")
        print(
            f"the ceiling found is this machine's {os.cpu_count()} cores, shared by the workers, the server"
            " and this process (and whatever else runs: see the load); past them more workers add wake-ups,"
            " not throughput (docs/scaling.md)"
        )


if __name__ == "__main__":
    main()
