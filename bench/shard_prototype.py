"""A prototype of sharding by root task id: two PostgreSQL primaries against one, in the same run.

A `ShardRouter` holds the store URLs of N primaries and sends each new root
task to one of them by a stable hash of its id (the first 8 bytes of its
SHA-256, modulo N: the same id goes to the same primary from any process,
whatever Python's hash seed). Only roots are routed: a child is made by its
parent's worker, in its parent's store, in the transaction that journals it
(engine/children.py), and its id is its parent's id, a dot and a seq, so the
tree stays on its root's primary and a child's primary is found from the
part of its id before the first dot (root ids here have no dot).

The bench starts two throwaway clusters (tests/helpers/pg.py's, commits
waiting for the disk). M trees of bench/scaling_flows.py's ``tree`` (K
journaled calls, then C children of K calls each) are run twice, on fresh
databases, from the first submit to the last completion:

1. one primary, 2W workers;
2. two primaries, W workers on each (the same workers in all), the roots
   routed by the router;
3. one primary, W workers: what the first primary does with half the
   workers, so that (2) against (1) can be told apart from fewer workers
   per primary doing better.

Afterwards it checks that each primary holds whole trees: every child on
the primary of its root, none elsewhere. On one machine both primaries share
its cores with the workers, so the second figure says what the routing
costs and whether a second server's own work (its WAL writer, its fsyncs)
adds anything here; the gain of a second primary on a machine of its own is
what docs/scaling.md argues from the one-primary ceiling.

Messages between trees on different primaries (an outbox in the sender's
primary, relayed idempotently into the receiver's inbox) are described in
docs/scaling.md; this prototype does not build them.

Run by hand: ``python bench/shard_prototype.py [--trees M] [--calls K] [--children C] [--workers W]``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import scaling_flows
from ratchet.store import open_store
from scale_bench import _problems, _server_cpu
from scaling_bench import Crew, create_schema, facts, finished, submit, with_group_commit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import DURABLE_SETTINGS, Cluster, throwaway_cluster  # noqa: E402


class ShardRouter:
    """Which primary a task tree lives on, from its root task id."""

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("a router needs at least one primary")
        self.urls = list(urls)

    def primary_for(self, task_id: str) -> str:
        """The URL of the primary holding `task_id`'s tree (a root's id, or any of its descendants')."""
        digest = hashlib.sha256(root_of(task_id).encode()).digest()
        return self.urls[int.from_bytes(digest[:8], "big") % len(self.urls)]

    def split(self, root_ids: Sequence[str]) -> dict[str, list[str]]:
        """`root_ids` grouped by the primary each goes to."""
        groups: dict[str, list[str]] = {url: [] for url in self.urls}
        for root_id in root_ids:
            groups[self.primary_for(root_id)].append(root_id)
        return groups


def root_of(task_id: str) -> str:
    """The root of a task's tree: a child's id is its parent's id, a dot and a seq."""
    return task_id.split(".", 1)[0]


def new_root_id() -> str:
    return f"tree-{secrets.token_hex(6)}"  # no dot: the first dot in an id starts its child part


class Result:
    """One configuration's figures."""

    def __init__(self, label: str, tasks: int, calls: int, seconds: float, cpu: float, problems: list[str]):
        self.label, self.tasks, self.calls, self.seconds, self.cpu = label, tasks, calls, seconds, cpu
        self.problems = problems

    def line(self, base: Result) -> str:
        tasks_s, calls_s = self.tasks / self.seconds, self.calls / self.seconds
        return (
            f"  {self.label:<40} {tasks_s:7.1f} tasks/s {tasks_s / (base.tasks / base.seconds):5.2f}x"
            f"   {calls_s:7.0f} calls/s {calls_s / (base.calls / base.seconds):5.2f}x   {self.seconds:6.2f} s"
            f"   {self.cpu / self.seconds:.2f} of {os.cpu_count()} cores busy;"
            f" worker logs: {len(self.problems)} warning/error lines"
        )


def run_sharded(clusters: Sequence[Cluster], workdir: Path, args: argparse.Namespace, workers: int) -> Result:
    """Run the trees on `clusters` (one database each), `workers` workers per primary."""
    per_tree = 1 + args.children
    with contextlib.ExitStack() as stack:
        urls = [with_group_commit(stack.enter_context(c.database()), args.group_commit) for c in clusters]
        for url in urls:
            asyncio.run(create_schema(url))
        router = ShardRouter(urls)
        roots = router.split([new_root_id() for _ in range(args.trees)])
        label = f"{len(urls)}p"
        crews = [
            Crew(url, workdir, f"{label}{number}", workers, args.concurrency)
            for number, url in enumerate(urls)
        ]
        try:
            for crew in crews:
                asyncio.run(crew.ready())
            cpu = sum(_server_cpu(c) for c in clusters) + sum(crew.cpu() for crew in crews)
            began = time.time()
            asyncio.run(_submit_all(roots, args))
            lasts = asyncio.run(_finished_all(roots, per_tree, crews))
            cpu = sum(_server_cpu(c) for c in clusters) + sum(crew.cpu() for crew in crews) - cpu
        finally:
            for crew in crews:
                crew.stop()
        asyncio.run(_check_trees(router, roots, per_tree))
    total = args.trees * per_tree
    noun = "primary" if len(urls) == 1 else "primaries"
    return Result(
        f"{len(urls)} {noun} x {workers} worker(s) ({'/'.join(str(len(r)) for r in roots.values())} trees)",
        total,
        total * args.calls,
        max(lasts) - began,
        cpu,
        [line for crew in crews for line in _problems(crew.logs)],
    )


async def _submit_all(roots: dict[str, list[str]], args: argparse.Namespace) -> None:
    inputs = {"count": args.calls, "children": args.children}
    await asyncio.gather(
        *(
            submit(url, len(ids), inputs, workflow=scaling_flows.tree, task_ids=ids)
            for url, ids in roots.items()
            if ids
        )
    )


async def _finished_all(roots: dict[str, list[str]], per_tree: int, crews: Sequence[Crew]) -> list[float]:
    return list(
        await asyncio.gather(
            *(finished(url, len(ids) * per_tree, crews) for url, ids in roots.items() if ids)
        )
    )


async def _check_trees(router: ShardRouter, roots: dict[str, list[str]], per_tree: int) -> None:
    """Every task on a primary belongs to a tree routed there, and every tree is whole."""
    for url, ids in roots.items():
        store = await open_store(url, create=False)
        try:
            tasks = await store.list_tasks()
        finally:
            await store.close()
        strays = [task.id for task in tasks if router.primary_for(task.id) != url]
        if strays or len(tasks) != len(ids) * per_tree:
            raise SystemExit(
                f"primary {url}: {len(tasks)} tasks for {len(ids)} trees of {per_tree};"
                f" not routed here: {strays[:5]}"
            )
        children = [task for task in tasks if task.parent_id is not None]
        if any(root_of(task.id) not in ids for task in children):
            raise SystemExit(f"primary {url} holds a child of a tree routed elsewhere")


@contextlib.contextmanager
def clusters(count: int) -> Iterator[list[Cluster]]:
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(throwaway_cluster(settings=DURABLE_SETTINGS)) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", type=int, default=100, help="root tasks (M)")
    parser.add_argument("--calls", type=int, default=10, help="journaled calls per task (K)")
    parser.add_argument("--children", type=int, default=2, help="children per root (C)")
    parser.add_argument("--workers", type=int, default=2, help="workers per primary when there are two (W)")
    parser.add_argument("--concurrency", type=int, default=8, help="tasks each worker runs at once")
    parser.add_argument(
        "--group-commit", choices=["on", "off"], default="off", help="the store URLs' group_commit"
    )
    args = parser.parse_args()
    if min(args.trees, args.calls, args.workers) < 1 or args.children < 0:
        parser.error("--trees, --calls and --workers must be at least 1, --children at least 0")

    with clusters(2) as both:
        print("\n".join(facts(both[0])))
        print(
            f"{args.trees} trees (a root of {args.calls} calls, then {args.children} children of {args.calls}"
            f" calls each); workers with --concurrency {args.concurrency}; group_commit={args.group_commit};"
            " from the first submit to the last completion"
        )
        with tempfile.TemporaryDirectory(prefix="ratchet-shard-prototype-") as tmp:
            one = run_sharded(both[:1], Path(tmp), args, 2 * args.workers)
            two = run_sharded(both, Path(tmp), args, args.workers)
            half = run_sharded(both[:1], Path(tmp), args, args.workers)
        for result in (one, two, half):
            print(result.line(one))
            for line in result.problems[:5]:
                print(f"      {line}")
        print("every tree whole on the primary its root was routed to; none elsewhere")
        print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
