"""How Ratchet scales on PostgreSQL: worker processes, the cost of a journaled call, event latency.

Starts a throwaway PostgreSQL cluster (``tests/helpers/pg.py``: the server binaries on
PATH or the newest /usr/lib/postgresql/*/bin, run as the ``postgres`` user
when root, with the tests' settings: fsync, synchronous_commit and
full_page_writes off, so no commit waits for the disk) and measures:

1. Throughput: N agent tasks (scripted model: plan one step, call one no-op
   read-only tool, answer, verify) are submitted from this process, then W
   ``ratchet worker --until-idle`` processes (``--concurrency C`` each) are
   started at once. The figure is N / (last task completed - workers
   launched), for W = 1, 2, 4, each on a fresh database. Every task must
   complete. Beside it: the CPU the workers and the server used (from
   getrusage and /proc) and the transactions the database counted
   (pg_stat_database: the workers' own, and each listening backend's read of
   every NOTIFY).
2. Overhead per op: bench/durable_bench.py's measure on a PostgreSQL store (a
   no-op tool with side effects called through ``ctx.call_tool``, minus the
   same calls made directly), beside raw psycopg ``INSERT`` of a
   journal-sized row and ``COMMIT`` per op on the same cluster (async, the
   driver mode the store uses; sync shown too).
3. Event latency: a follower process opens ``store.changes(events_topic(id))``
   and reads the task's new events each time it is woken; this process
   appends events a few ms apart. The figure is the time from
   ``append_event`` returning here (committed) to the follower having read the
   event there. On PostgreSQL, then on SQLite, whose feed polls instead.

Run: ``python bench/scale_bench.py [--tasks N] [--workers 1,2,4] [--concurrency C] [--ops N] [--events N]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import shlex
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import psycopg

import ratchet
from durable_bench import PAYLOAD, direct, through_context
from ratchet.cli.agent_spec import build_agent
from ratchet.records import Event, Task
from ratchet.store import open_store
from ratchet.store.changes import events_topic

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import Cluster, throwaway_cluster  # noqa: E402 (after the path above)

LEASE_TTL = 30
WORKER_TIME_LIMIT = 240.0  # seconds per configuration before the bench gives up
STATS_SETTLE = 0.5  # seconds for a closed connection's backend to exit and report its statistics
SCRIPT = {
    "plan": [
        {
            "content": {
                "goal": "one no-op call",
                "steps": [
                    {
                        "step_name": "Touch",
                        "description": "call noop once",
                        "action_instruction": "Call noop with label touch.",
                        "validation_instruction": "noop answered",
                    }
                ],
            }
        }
    ],
    "act": [{"tool_calls": [{"name": "noop", "arguments": {"label": "touch"}}]}, {"content": "touched"}],
    "verify": [{"content": {"passed": True, "reason": "noop answered"}}],
    "replan": [],
    "summarize": [],
}
TOOLS = '''"""The scale bench's one tool: it does nothing."""

import ratchet


@ratchet.tool(risk="read_only")
async def noop(label: str) -> dict:
    """Do nothing and say so.

    Args:
        label: anything.
    """
    return {"ok": True, "label": label}
'''
RAW_TABLE = (
    "CREATE TABLE ops (task_id TEXT, seq INTEGER, kind TEXT, name TEXT, status TEXT,"
    " input TEXT, output TEXT, started BIGINT, PRIMARY KEY (task_id, seq))"
)
RAW_INSERT = "INSERT INTO ops VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
RAW_WARMUP = 200  # untimed inserts first: connection set up, statement prepared


# --------------------------------------------------------------------------- throughput


@dataclass(frozen=True)
class WorkersRun:
    """What one configuration of worker processes did with the tasks (times in seconds)."""

    workers: int
    tasks: int
    seconds: float  # from launching the workers to the last task completed
    first_taken: float  # from launching the workers to the first task started
    until_exit: float  # from launching the workers to the last one exiting
    workers_cpu: float
    server_cpu: float
    transactions: int  # committed or rolled back in the database while the workers ran
    log_problems: list[str]

    @property
    def tasks_per_s(self) -> float:
        return self.tasks / self.seconds

    @property
    def cores_busy(self) -> float:
        return (self.workers_cpu + self.server_cpu) / self.until_exit

    @property
    def cpu_per_task(self) -> float:
        return (self.workers_cpu + self.server_cpu) / self.tasks


class Throughput:
    """Submits agent tasks to a fresh database, then times worker processes running them all."""

    def __init__(self, cluster: Cluster, workdir: Path, tasks: int, concurrency: int) -> None:
        self.cluster, self.workdir = cluster, workdir
        self.tasks, self.concurrency = tasks, concurrency
        script, tools = workdir / "script.json", workdir / "tools.py"
        script.write_text(json.dumps(SCRIPT, indent=1))
        tools.write_text(TOOLS)
        self.env = {**os.environ, "RATCHET_HOME": str(workdir / "home")}
        os.environ["RATCHET_HOME"] = self.env["RATCHET_HOME"]  # submit checks the agent here
        self.agent = build_agent(model=f"scripted:{script}", tool_files=[str(tools)])

    def run(self, workers: int) -> WorkersRun:
        with self.cluster.database() as url:
            asyncio.run(self._submit(url))
            transactions = self._transactions(url)
            server_cpu, workers_cpu = _server_cpu(self.cluster), _children_cpu()
            launched = time.time()
            logs = self._run_workers(url, workers)
            exited = time.time()
            server_cpu, workers_cpu = _server_cpu(self.cluster) - server_cpu, _children_cpu() - workers_cpu
            transactions = self._transactions(url) - transactions
            statuses, first_taken, last_done = asyncio.run(self._outcome(url))
        if statuses["completed"] != self.tasks:
            tails = "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}" for log in logs)
            signalled = [
                log.name
                for log in logs
                if ": stopping; running tasks finish" in log.read_text(errors="replace")
            ]
            outside = (
                f"; stopped by a signal from outside the bench: {', '.join(signalled)}" if signalled else ""
            )
            raise SystemExit(
                f"{workers} worker(s): not every task completed: {dict(statuses)}{outside}\n{tails}"
            )
        return WorkersRun(
            workers=workers,
            tasks=self.tasks,
            seconds=last_done - launched,
            first_taken=first_taken - launched,
            until_exit=exited - launched,
            workers_cpu=workers_cpu,
            server_cpu=server_cpu,
            transactions=transactions,
            log_problems=_problems(logs),
        )

    def _transactions(self, url: str) -> int:
        """Transactions the database has ended so far (once closed connections have reported theirs)."""
        time.sleep(STATS_SETTLE)
        with self.cluster.admin() as conn:
            row = conn.execute(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s",
                (url.rsplit("/", 1)[1],),
            ).fetchone()
        return int(row[0]) if row else 0

    async def _submit(self, url: str) -> None:
        async with ratchet.Runtime(url) as runtime:
            for number in range(self.tasks):
                await runtime.submit(self.agent, instruction=f"call noop once, #{number}")

    def _run_workers(self, url: str, workers: int) -> list[Path]:
        logs = [self.workdir / f"{workers}w-{number}.log" for number in range(1, workers + 1)]
        processes = []
        for log in logs:
            with log.open("wb") as out:
                processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "ratchet",
                            "worker",
                            "--store",
                            url,
                            "--name",
                            log.stem,
                            "--concurrency",
                            str(self.concurrency),
                            "--lease-ttl",
                            str(LEASE_TTL),
                            "--until-idle",
                        ],
                        cwd=self.workdir,
                        env=self.env,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        deadline = time.monotonic() + WORKER_TIME_LIMIT
        try:
            for process in processes:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise SystemExit(f"{workers} worker(s) still running after {WORKER_TIME_LIMIT:g} s") from None
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        failed = [
            f"{log.name}: exit {p.returncode}" for log, p in zip(logs, processes, strict=True) if p.returncode
        ]
        if failed:
            raise SystemExit(f"worker(s) failed: {', '.join(failed)}; logs in {self.workdir}")
        return logs

    async def _outcome(self, url: str) -> tuple[Counter[str], float, float]:
        store = await open_store(url, create=False)
        try:
            tasks = await store.list_tasks()
        finally:
            await store.close()
        statuses = Counter(str(task.status) for task in tasks)
        done = [task for task in tasks if str(task.status) == "completed"]
        if not done:
            return statuses, 0.0, 0.0
        first_taken = min(task.started_at.timestamp() for task in done if task.started_at)
        return statuses, first_taken, max(task.updated_at.timestamp() for task in done)


def _children_cpu() -> float:
    """CPU seconds used by this process's children that have ended (the workers, once waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _server_cpu(cluster: Cluster) -> float:
    """CPU seconds used so far by the cluster's postmaster and its processes, ended ones included."""
    postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # from field 3 (state) on
        except OSError:
            continue  # ended since the listing
        if int(stat.parent.name) == postmaster:
            ticks += sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def _problems(logs: list[Path]) -> list[str]:
    """Lines of the worker logs that are warnings, errors or tracebacks."""
    found = []
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if " WARNING " in line or " ERROR " in line or line.startswith("Traceback"):
                found.append(f"{log.name}: {line}")
    return found


# --------------------------------------------------------------------------- overhead per op


async def raw_async(url: str, count: int) -> float:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute(RAW_TABLE.replace("ops", "ops_async", 1))
        await conn.commit()
        insert = RAW_INSERT.replace("ops", "ops_async", 1)
        rows = _raw_rows(count)
        for row in rows[:RAW_WARMUP]:
            await conn.execute(insert, row)
            await conn.commit()
        began = time.perf_counter()
        for row in rows[RAW_WARMUP:]:
            await conn.execute(insert, row)
            await conn.commit()
        return (time.perf_counter() - began) / count


def raw_sync(url: str, count: int) -> float:
    with psycopg.connect(url) as conn:
        conn.execute(RAW_TABLE.replace("ops", "ops_sync", 1))
        conn.commit()
        insert = RAW_INSERT.replace("ops", "ops_sync", 1)
        rows = _raw_rows(count)
        for row in rows[:RAW_WARMUP]:
            conn.execute(insert, row)
            conn.commit()
        began = time.perf_counter()
        for row in rows[RAW_WARMUP:]:
            conn.execute(insert, row)
            conn.commit()
        return (time.perf_counter() - began) / count


def _raw_rows(count: int) -> list[tuple[object, ...]]:
    """Journal-sized rows: a warm-up's worth (untimed), then `count`."""
    payload = json.dumps(PAYLOAD)
    return [
        ("bench", i, "tool", "noop", "succeeded", payload, '{"ok":true}', i)
        for i in range(RAW_WARMUP + count)
    ]


def overhead(cluster: Cluster, count: int) -> dict[str, float]:
    with cluster.database() as raw_url, cluster.database() as url:  # the store wants a database of its own
        raw = asyncio.run(raw_async(raw_url, count))
        raw_blocking = raw_sync(raw_url, count)
        plain = asyncio.run(direct(count))
        durable = asyncio.run(through_context(url, count))
    return {
        "raw": raw,
        "raw_sync": raw_blocking,
        "direct": plain,
        "durable": durable,
        "overhead": durable - plain,
    }


# --------------------------------------------------------------------------- event latency


def follow(url: str, task_id: str, count: int) -> None:
    """In the follower process: read the task's events as the feed wakes; print when each was read."""

    async def main() -> None:
        store = await open_store(url, create=False)
        seen: dict[int, float] = {}
        try:
            async with store.changes(events_topic(task_id)) as feed:
                print("ready", flush=True)
                last = 0
                while last < count:
                    await feed.wait(5.0)
                    events = await store.list_events(task_id, after_seq=last)
                    now = time.time()
                    for event in events:
                        seen[event.seq] = now
                        last = event.seq
        finally:
            await store.close()
        print(json.dumps(seen), flush=True)

    asyncio.run(main())


@dataclass(frozen=True)
class Latency:
    """How long events took to reach the follower, in ms."""

    p50: float
    p99: float
    max: float
    append_p50: float  # append_event itself, in the writer
    poll: float | None  # the store's change_poll: None when it wakes feeds itself


async def event_latency(url: str, count: int, spacing: float) -> Latency:
    """Append `count` events `spacing` apart while a follower process reads them; latencies in ms."""
    task_id = "bench-events"
    store = await open_store(url)
    try:
        await store.create_task(Task(id=task_id, name="bench", instruction="watch the events"))
        code = (
            f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import scale_bench; "
            f"scale_bench.follow({url!r}, {task_id!r}, {count})"
        )
        follower = await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=subprocess.PIPE)
        try:
            assert follower.stdout is not None
            if (await follower.stdout.readline()).strip() != b"ready":
                raise SystemExit(f"the event follower did not start (exit {await follower.wait()})")
            committed: dict[int, float] = {}
            appending: list[float] = []
            for number in range(count):
                began = time.time()
                event = await store.append_event(
                    Event(task_id=task_id, kind="bench", message=f"event {number}")
                )
                committed[event.seq] = time.time()
                appending.append((committed[event.seq] - began) * 1000)
                await asyncio.sleep(spacing)
            out, _ = await asyncio.wait_for(follower.communicate(), timeout=60)
        finally:
            if follower.returncode is None:
                follower.kill()
                await follower.wait()
        poll = store.change_poll
    finally:
        await store.close()
    seen = {int(seq): at for seq, at in json.loads(out.decode().strip().splitlines()[-1]).items()}
    delays = sorted((seen[seq] - at) * 1000 for seq, at in committed.items())
    return Latency(
        p50=_percentile(delays, 50),
        p99=_percentile(delays, 99),
        max=delays[-1],
        append_p50=_percentile(sorted(appending), 50),
        poll=poll,
    )


def _percentile(ordered: list[float], pct: float) -> float:
    """The nearest-rank percentile of an ascending list."""
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


# --------------------------------------------------------------------------- report


def _facts(cluster: Cluster) -> list[str]:
    with cluster.admin() as conn:
        shown = {
            name: next(iter(conn.execute(f"SHOW {name}").fetchone() or ("?",)))
            for name in ("server_version", "fsync", "synchronous_commit", "full_page_writes")
        }
    server = shown.pop("server_version")
    return [
        f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}",
        (
            f"python {platform.python_version()}, PostgreSQL {server}, psycopg {psycopg.__version__} "
            f"({psycopg.pq.__impl__}), sqlite {sqlite3.sqlite_version}, "
            f"{platform.system()} {platform.machine()}"
        ),
        (
            f"{os.cpu_count()} cpus ({_cpu_model()}), shared by the workers, the server and this process; "
            f"load average {os.getloadavg()[0]:.2f} at the start"
        ),
        (
            f"server: {', '.join(f'{name}={value}' for name, value in shown.items())}"
            " (tests/helpers/pg.py's throwaway settings: no commit waits for the disk)"
        ),
    ]


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown model"


def report_throughput(cluster: Cluster, workdir: Path, args: argparse.Namespace) -> None:
    print(
        f"throughput: {args.tasks} agent tasks (scripted model, 1 no-op read-only tool call each), "
        f"workers with --concurrency {args.concurrency} --lease-ttl {LEASE_TTL} --until-idle"
    )
    throughput = Throughput(cluster, workdir, args.tasks, args.concurrency)
    first = None
    for workers in args.workers:
        run = throughput.run(workers)
        first = first or run.tasks_per_s
        print(
            f"  {workers} worker(s) x {args.concurrency}   {run.tasks_per_s:7.1f} tasks/s"
            f"   {run.tasks_per_s / first:5.2f}x   all done in {run.seconds:6.2f} s"
            f" (first task taken at {run.first_taken:.2f} s)"
        )
        print(
            f"      cpu: workers {run.workers_cpu:.1f} s + server {run.server_cpu:.1f} s"
            f" = {run.cores_busy:.2f} of {os.cpu_count()} cores busy,"
            f" {run.cpu_per_task * 1000:.1f} ms per task;"
            f" {run.transactions / run.tasks:.1f} server transactions per task;"
            f" worker logs: {len(run.log_problems)} warning/error lines"
        )
        for line in run.log_problems[:5]:
            print(f"      {line}")


def report_overhead(cluster: Cluster, ops: int) -> None:
    figures = overhead(cluster, ops)
    ratio = figures["overhead"] / figures["raw"]
    print(f"overhead per tool op on PostgreSQL ({ops} ops, no-op tool with side effects):")
    print(f"  direct call                 {figures['direct'] * 1e6:9.1f} us")
    print(f"  through ctx.call_tool       {figures['durable'] * 1e6:9.1f} us")
    print(f"  durable overhead            {figures['overhead'] * 1e6:9.1f} us")
    print(
        f"  raw insert+commit (async)   {figures['raw'] * 1e6:9.1f} us"
        "   psycopg AsyncConnection, as the store"
    )
    print(f"  raw insert+commit (sync)    {figures['raw_sync'] * 1e6:9.1f} us   psycopg Connection")
    print(f"  overhead / raw (async)      {ratio:9.2f}x")


def report_events(cluster: Cluster, workdir: Path, events: int, spacing: float) -> None:
    print(
        f"event latency: {events} events {spacing * 1000:g} ms apart; "
        "from append_event returning here to a follower process having read the event"
    )
    with cluster.database() as url:
        postgres = asyncio.run(event_latency(url, events, spacing))
    sqlite = asyncio.run(event_latency(f"sqlite:///{workdir / 'events.db'}", events, spacing))
    for name, latency in (("PostgreSQL", postgres), ("SQLite", sqlite)):
        feed = "woken by the store" if latency.poll is None else f"polls every {latency.poll:g} s"
        print(
            f"  {name:<11} p50 {latency.p50:7.1f} ms   p99 {latency.p99:7.1f} ms   max {latency.max:7.1f} ms"
            f"   (append_event p50 {latency.append_p50:.2f} ms; feed {feed})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument(
        "--workers",
        type=_counts,
        default=[1, 2, 4],
        help="worker process counts, comma-separated (default 1,2,4)",
    )
    parser.add_argument("--concurrency", type=int, default=4, help="tasks each worker runs at once")
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--events", type=int, default=500)
    parser.add_argument("--spacing", type=float, default=0.005, help="seconds between events")
    args = parser.parse_args()

    with throwaway_cluster() as cluster:
        print("\n".join(_facts(cluster)))
        with tempfile.TemporaryDirectory(prefix="ratchet-scale-bench-") as tmp:
            report_throughput(cluster, Path(tmp), args)
            report_overhead(cluster, args.ops)
            report_events(cluster, Path(tmp), args.events, args.spacing)


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("every worker count must be at least 1")
    return counts


if __name__ == "__main__":
    main()
