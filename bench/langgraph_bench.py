"""RatchetSaver beside SqliteSaver and PostgresSaver: the message-append graph, its bytes and per-step time.

The graph: one node that loops back to itself N times (2,000 by default),
each time appending one message of 300 bytes (random, so incompressible) to a ``messages`` list
channel with an add reducer (``Annotated[list[str], operator.add]``): the
pattern of an agent's history, whose whole value LangGraph's savers store
at every step. Invoked with ``durability="sync"`` (each step's checkpoint is
written before the next step starts) through ``graph.stream``.

Each saver runs in a fresh process on a fresh database, all in the same
run: RatchetSaver on SQLite and on PostgreSQL, SqliteSaver, PostgresSaver
(a throwaway PostgreSQL cluster started here, with the tests' settings: no
commit waits for the disk). The runs go round the savers in turn, so a
change of the machine's load touches them all; figures are medians.

- bytes: what the graph added to the database (SQLite: the file and its WAL
  after a checkpoint; PostgreSQL: ``pg_total_relation_size`` summed over
  every table outside the system schemas), against the raw payload, the sum
  of the messages' UTF-8 bytes. Target for RatchetSaver: <= 2x.
- per step: the time between two steps' updates from ``graph.stream`` (a
  node's run and its checkpoint's write), the median over the last 10 % of
  steps against the first 10 % (a median, as a step slowed by other work on
  a shared machine is noise, not growth). Target for RatchetSaver: <= 1.5x.
- ``--by-table``: then, for RatchetSaver, where its bytes went: each
  LangGraph table and index's growth a step (SQLite's ``dbstat``;
  PostgreSQL's ``pg_relation_size`` of a table's rows, the rest of its forks
  and its TOAST beside them, and each index whole), the store's other tables
  together (the thread's task). The figures a change to the layout is
  measured by, each table and index alone.

Needs ``pip install -e '.[langgraph,bench]'``.

Run: ``python bench/langgraph_bench.py [--steps 2000] [--runs 3] [--savers ratchet-sqlite,...] [--by-table]``
"""

from __future__ import annotations

import argparse
import base64
import itertools
import json
import operator
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster and peer_loops' byte count
from bench.peer_loops import stored_bytes  # noqa: E402 (after the path above)
from tests.helpers.pg import INSTALL_HINT, Cluster, find_binaries  # noqa: E402

SAVERS = ("ratchet-sqlite", "ratchet-postgres", "sqlitesaver", "postgressaver")
CHILD_TIME_LIMIT = 1800.0
BYTES_TARGET = 2.0
GROWTH_TARGET = 1.5
THREAD = "langgraph-bench"


def message(step: int) -> str:
    """Step `step`'s message: 300 bytes, each one different, that no store can compress (PostgreSQL's
    TOAST would shrink a repeated phrase, SQLite would not: the comparison would be of compressors)."""
    return base64.b64encode(random.Random(step).randbytes(225)).decode()


# --------------------------------------------------------------------------- one run, in its own process

_PG_RELATIONS = (
    # A table's rows (its main fork), then its other forks (free-space and visibility maps) and TOAST;
    # an index whole. Together they are `stored_bytes`' sum.
    "SELECT c.relname,"
    " CASE WHEN c.relkind = 'i' THEN pg_total_relation_size(c.oid) ELSE pg_relation_size(c.oid) END,"
    " CASE WHEN c.relkind = 'i' THEN 0"
    " ELSE pg_total_relation_size(c.oid) - pg_indexes_size(c.oid) - pg_relation_size(c.oid) END"
    " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relkind IN ('r', 'p', 'm', 'i')"
    " AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%'"
)


def relation_bytes(where: str) -> dict[str, int]:
    """The bytes of each table and index of a store (after `stored_bytes`, which checkpoints SQLite's WAL)."""
    sizes: dict[str, int] = {}
    if where.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(where) as server:
            for name, main, rest in server.execute(_PG_RELATIONS).fetchall():
                sizes[name] = int(main)
                if rest:
                    sizes[f"{name} (maps, TOAST)"] = int(rest)
        return sizes
    conn = sqlite3.connect(where)
    try:
        for name, size in conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
            sizes[name] = int(size)
    finally:
        conn.close()
    return sizes


def _growth(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Each relation's growth: LangGraph's each by name, the store's others together."""
    grown: dict[str, int] = {}
    for name in sorted(before.keys() | after.keys()):
        key = name if "langgraph" in name else "the store's other tables"
        grown[key] = grown.get(key, 0) + after.get(name, 0) - before.get(name, 0)
    return grown


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    step: int


@contextmanager
def open_saver(saver: str, url: str) -> Iterator[Any]:
    if saver.startswith("ratchet"):
        from ratchet.integrations.langgraph import RatchetSaver

        with RatchetSaver.from_conn_string(url) as ours:
            yield ours
    elif saver == "sqlitesaver":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(url) as theirs:
            theirs.setup()
            yield theirs
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(url) as server_saver:
            server_saver.setup()
            yield server_saver


def child(saver: str, url: str, steps: int) -> dict[str, Any]:
    """Run the graph once; its figures."""
    from langgraph.graph import END, START, StateGraph

    def append(state: State) -> dict[str, Any]:
        return {"messages": [message(state["step"])], "step": state["step"] + 1}

    builder = StateGraph(State)
    builder.add_node("append", append)
    builder.add_edge(START, "append")
    builder.add_conditional_edges("append", lambda state: "append" if state["step"] < steps else END)
    where = url.removeprefix("sqlite:///")  # a file's path for the byte count, a PostgreSQL URL as it is
    with open_saver(saver, url) as checkpointer:  # the schema first: the bytes' starting point
        pass
    before = stored_bytes(where)
    relations = relation_bytes(where) if saver.startswith("ratchet") else {}
    config: Any = {"configurable": {"thread_id": THREAD}, "recursion_limit": steps + 10}
    with open_saver(saver, url) as checkpointer:
        graph = builder.compile(checkpointer=checkpointer)
        stamps = [time.perf_counter()]
        for _ in graph.stream({"messages": [], "step": 0}, config, durability="sync", stream_mode="updates"):
            stamps.append(time.perf_counter())
        final = graph.get_state(config).values
    if final["step"] != steps or len(final["messages"]) != steps:
        raise SystemExit(f"the graph stopped at step {final['step']} of {steps}")
    # From the first step's update on: the input's checkpoint and the graph's start are not a step.
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps[1:])]
    tenth = max(1, len(gaps) // 10)
    grown = stored_bytes(where) - before
    return {
        "bytes": grown,
        "relations": _growth(relations, relation_bytes(where)) if relations else {},
        "payload": sum(len(message(step).encode()) for step in range(steps)),
        "first": statistics.median(gaps[:tenth]),
        "last": statistics.median(gaps[-tenth:]),
        "seconds": stamps[-1] - stamps[0],
    }


# --------------------------------------------------------------------------- the runs, and the table


def run(saver: str, steps: int, cluster: Cluster | None, workdir: Path) -> dict[str, Any]:
    """One run of `saver` in a fresh process on a fresh database."""
    if saver.endswith("postgres") or saver == "postgressaver":
        if cluster is None:
            raise RuntimeError("no PostgreSQL cluster")
        with cluster.database() as url:
            return _child(saver, url, steps)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = Path(tmp) / "store.db"
        return _child(saver, f"sqlite:///{path}" if saver.startswith("ratchet") else str(path), steps)


def _child(saver: str, url: str, steps: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", saver, url, str(steps)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIME_LIMIT, cwd=REPO)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise RuntimeError(f"exit {done.returncode}: {said}")
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def table(measured: dict[str, list[dict[str, Any]]], failures: dict[str, str]) -> list[str]:
    lines = [
        "| saver | store | bytes stored | / raw payload | target | per step, first 10 % | last 10 % "
        "| last / first | target | whole run |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for saver in measured:
        name, store = {
            "ratchet-sqlite": ("RatchetSaver", "SQLite"),
            "ratchet-postgres": ("RatchetSaver", "PostgreSQL"),
            "sqlitesaver": ("SqliteSaver", "SQLite"),
            "postgressaver": ("PostgresSaver", "PostgreSQL"),
        }[saver]
        if saver in failures:
            lines.append(f"| {name} | {store} | cannot run: {failures[saver]} |||||||")
            continue
        runs = measured[saver]
        stored = statistics.median(r["bytes"] for r in runs)
        payload = runs[0]["payload"]
        first = statistics.median(r["first"] for r in runs)
        last = statistics.median(r["last"] for r in runs)
        growth = statistics.median(r["last"] / r["first"] for r in runs)
        ours = saver.startswith("ratchet")
        lines.append(
            f"| {name} | {store} | {stored / 1e6:,.1f} MB | {stored / payload:,.1f}x "
            f"| {'<= 2x' if ours else '-'} | {first * 1e3:.2f} ms | {last * 1e3:.2f} ms | {growth:.2f}x "
            f"| {'<= 1.5x' if ours else '-'} | {statistics.median(r['seconds'] for r in runs):.1f} s |"
        )
    return lines


def by_table(measured: dict[str, list[dict[str, Any]]], steps: int) -> list[str]:
    """Where RatchetSaver's bytes went: each relation's growth a step, the median of the runs."""
    ours = [saver for saver, runs in measured.items() if saver.startswith("ratchet") and runs]
    names = sorted({name for saver in ours for run in measured[saver] for name in run["relations"]})
    lines = [
        "| bytes a step | " + " | ".join(saver.removeprefix("ratchet-") for saver in ours) + " |",
        "|---|" + "---|" * len(ours),
    ]
    for name in [*names, "total"]:
        if name != "total" and not any(r["relations"].get(name) for saver in ours for r in measured[saver]):
            continue  # grew in no run
        cells = []
        for saver in ours:
            runs = measured[saver]
            grown = [r["bytes"] if name == "total" else r["relations"].get(name, 0) for r in runs]
            cells.append(f"{statistics.median(grown) / steps:,.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--savers", default=",".join(SAVERS), help=",".join(SAVERS))
    parser.add_argument("--by-table", action="store_true", help="RatchetSaver's bytes by table and index")
    args = parser.parse_args()
    savers = [name for name in args.savers.split(",") if name]
    unknown = set(savers) - set(SAVERS)
    if unknown or args.steps < 10 or args.runs < 1:
        parser.error(f"savers are {', '.join(SAVERS)}; --steps at least 10, --runs at least 1")
    failures: dict[str, str] = {}
    cluster = None
    if any("postgres" in name for name in savers):
        binaries = find_binaries()
        try:
            if binaries is None:
                raise RuntimeError(INSTALL_HINT)
            cluster = Cluster(binaries)
            cluster.start()
        except RuntimeError as refused:
            if cluster is not None:
                cluster.stop()
            cluster = None
            failures.update({name: str(refused).splitlines()[0] for name in savers if "postgres" in name})
    print(f"{args.steps} steps, {args.runs} run(s) of each saver, load average {os.getloadavg()[0]:.2f}")
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name in savers}
    try:
        with tempfile.TemporaryDirectory(prefix="ratchet-langgraph-bench-") as tmp:
            for number in range(1, args.runs + 1):
                for name in savers:
                    if name in failures:
                        continue
                    try:
                        figures = run(name, args.steps, cluster, Path(tmp))
                    except (RuntimeError, subprocess.TimeoutExpired) as reason:
                        failures[name] = " ".join(str(reason).split())
                        continue
                    measured[name].append(figures)
                    print(
                        f"  run {number}: {name:16} {figures['bytes'] / 1e6:9.1f} MB"
                        f"  {figures['last'] / figures['first']:5.2f}x  {figures['seconds']:6.1f} s",
                        file=sys.stderr,
                        flush=True,
                    )
    finally:
        if cluster is not None:
            cluster.stop()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} at the end; medians of the runs\n")
    print("\n".join(table(measured, failures)))
    if args.by_table:
        print(f"\nRatchetSaver's growth by table and index, a step ({args.steps} steps)\n")
        print("\n".join(by_table(measured, args.steps)))


if __name__ == "__main__":
    main()
