"""Ratchet beside LangGraph and DBOS: the same N-step loop, its cost per step and the bytes it stores.

Each system runs one loop of N steps, each step producing one result of
about 300 bytes that the system makes durable before the next step starts
(bench/peer_loops.py, which also says what is timed):

- Ratchet, a ``read_only`` tool (one commit per step) and a ``write_local``
  tool (an intent and an outcome: two commits), on SQLite at
  ``durability=normal`` and ``durability=full``, and on PostgreSQL;
- LangGraph, a ``StateGraph`` looping N times, with ``SqliteSaver`` and
  ``PostgresSaver``, invoked with ``durability="sync"``;
- DBOS, a workflow of N ``@DBOS.step()`` calls, on SQLite and PostgreSQL;
- the floor, measured with Ratchet: the same N results stored by the driver
  alone, one raw insert and commit each, on the same store at the same
  durability (bench/peer_loops.py, "the floor").

Every measurement is a fresh process on a fresh database (a new SQLite file;
a new database on a throwaway PostgreSQL cluster started here, as
bench/scale_bench.py does, with the tests' settings: no commit waits for the
disk). The runs go round every configuration and N in turn, so a change of
the machine's load touches them all; each figure is the median of the runs.
A second table shows the fastest run of each: on a shared machine other
work only ever slows a run down, so the fastest is the least disturbed.

Per step: the loop's wall time / N, in microseconds, and the bytes the loop
added to the store / N (SQLite: the file and its WAL after a checkpoint;
PostgreSQL: ``pg_total_relation_size`` summed over every table outside the
system schemas, indexes and TOAST included). Each ratio is to Ratchet's
read-only loop on the same store at the same durability (one commit per
step, as a DBOS step's output); one more, at the largest N, to its
side-effect loop (two commits, as a LangGraph step's writes and checkpoint);
and one, at the largest N, to the floor on the same store at the same
durability: Ratchet's own overhead over the commits it needs (docs/benchmarks.md
sets a side-effect call at most 3x and a read-only one at most 1.5x a raw
insert+commit on SQLite, a side-effect call at most 2x on PostgreSQL).
On PostgreSQL the table also gives the transactions the server counted per
step (all of them, reads included: the slope between the smallest and the
largest N, so a loop's start and end cancel out).

Needs the peers: ``pip install -e '.[bench]'``. A peer that cannot run (not
installed, no PostgreSQL server, an error) gets its reason in the table.

Run: ``python bench/peers.py [--steps 500,1000,2000] [--runs 3] [--only ratchet,langgraph,dbos]
[--stores sqlite,postgres]``
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import platform
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # for the tests' throwaway cluster
from tests.helpers.pg import Cluster, throwaway_cluster  # noqa: E402 (after the path above)

LOOPS = Path(__file__).resolve().parent / "peer_loops.py"
Pick = Callable[[list[float]], float]  # which of the runs' figures a table shows
STATS_SETTLE = 0.5  # seconds for a closed connection's backend to exit and report its statistics
CHILD_TIME_LIMIT = 900.0  # seconds for one loop in its process before the bench gives up on it
SYSTEMS = ("ratchet", "langgraph", "dbos")  # the floor runs with Ratchet
STORES = ("sqlite", "postgres")
PACKAGES: tuple[str, ...] = (
    "ratchet-runtime",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
)
PACKAGES += ("langgraph-checkpoint-postgres", "dbos", "sqlalchemy", "psycopg")


@dataclass(frozen=True)
class Case:
    """One configuration: a system's loop on one store at one durability."""

    system: str
    variant: str  # Ratchet: read_only or side_effect; the peers have one loop ("-")
    store: str  # sqlite or postgres
    durability: str  # SQLite: normal or full, the level Ratchet is set to or a peer's equal; "" on PostgreSQL
    label: str = field(compare=False)
    writes: str = field(compare=False)  # the commits one step makes, by what the code does

    @property
    def baseline(self) -> Case:
        """Ratchet's read-only loop on the same store at the same durability."""
        return Case("ratchet", "read_only", self.store, self.durability, "", "")

    @property
    def floor(self) -> Case:
        """One raw insert+commit per step on the same store at the same durability."""
        return Case("floor", "-", self.store, self.durability, "", "")


def cases(systems: list[str], stores: list[str]) -> list[Case]:
    """Every configuration of the systems and stores asked for, in the table's order."""
    found: list[Case] = []
    for store in stores:
        levels = ("normal", "full") if store == "sqlite" else ("",)
        if "ratchet" in systems:
            for level in levels:
                found.append(Case("floor", "-", store, level, "floor: raw insert+commit", "1"))
                found.append(Case("ratchet", "read_only", store, level, "Ratchet, read-only tool", "1"))
                found.append(Case("ratchet", "side_effect", store, level, "Ratchet, side-effect tool", "2"))
        # SqliteSaver leaves `synchronous` at SQLite's default (FULL) and DBOS sets none either: both
        # sync every commit, as Ratchet's durability=full does. The child prints what it found.
        peer_level = "full" if store == "sqlite" else ""
        if "langgraph" in systems:
            # The node's writes (put_writes), then the checkpoint (put): two commits.
            found.append(Case("langgraph", "-", store, peer_level, 'LangGraph, durability="sync"', "2"))
        if "dbos" in systems:
            # A read of the step's recorded output (none), then the output: one commit.
            found.append(Case("dbos", "-", store, peer_level, "DBOS, @DBOS.step()", "1"))
    return found


@dataclass
class Figures:
    """What the runs of one case at one N measured."""

    seconds: list[float]
    bytes_added: list[int]
    transactions: list[int]  # PostgreSQL only: every transaction the server counted in the database
    settings: str

    def us_per_step(self, steps: int, pick: Pick = statistics.median) -> float:
        return pick(self.seconds) / steps * 1e6

    def bytes_per_step(self, steps: int) -> float:
        return statistics.median(self.bytes_added) / steps


class CannotRun(Exception):
    """A case could not run on this machine; the message says why, in one line."""


# --------------------------------------------------------------------------- running one loop


def missing_package(system: str) -> str | None:
    """Why `system` cannot be imported here, or None."""
    modules = {"ratchet": ["ratchet"], "langgraph": ["langgraph", "langgraph.checkpoint.sqlite"]}
    modules["dbos"] = ["dbos"]
    modules["floor"] = []  # sqlite3, and psycopg, which Ratchet needs on PostgreSQL too
    for module in modules[system]:
        with contextlib.suppress(ModuleNotFoundError):
            if importlib.util.find_spec(module) is not None:
                continue
        return f"{module} is not installed: pip install -e '.[bench]'"
    return None


def run_loop(case: Case, steps: int, cluster: Cluster | None, workdir: Path) -> dict[str, object]:
    """One loop of `steps` steps in a fresh process on a fresh store; its JSON figures.

    On PostgreSQL, also the transactions the server counted in the database (``transactions``).
    """
    if case.store == "postgres":
        if cluster is None:
            raise CannotRun("no PostgreSQL cluster")
        with cluster.database() as url:
            figures = run_child(case, url, steps)
            time.sleep(STATS_SETTLE)
            with cluster.admin() as conn:
                query = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = %s"
                row = conn.execute(query, (url.rsplit("/", 1)[1],)).fetchone()
            figures["transactions"] = int(row[0]) if row else 0
        return figures
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        path = str(Path(tmp) / "store.db")
        leveled = case.system in ("ratchet", "floor")  # set to the level; a peer keeps its own
        return run_child(case, f"{path}?durability={case.durability}" if leveled else path, steps)


def run_child(case: Case, store: str, steps: int) -> dict[str, object]:
    command = [sys.executable, str(LOOPS), case.system, case.variant, store, str(steps)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CHILD_TIME_LIMIT)
    except subprocess.TimeoutExpired:
        raise CannotRun(f"the loop of {steps} steps took more than {CHILD_TIME_LIMIT:.0f} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        said = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise CannotRun(f"exit {done.returncode}: {said}")
    figures: dict[str, object] = json.loads(lines[-1])
    return figures


def measure(
    chosen: list[Case], steps: list[int], runs: int, cluster: Cluster | None, failures: dict[Case, str]
) -> dict[tuple[Case, int], Figures]:
    """Every case at every N, `runs` times round; a case that fails once is left out from then on."""
    measured: dict[tuple[Case, int], Figures] = {}
    with tempfile.TemporaryDirectory(prefix="ratchet-peers-bench-") as tmp:
        for run in range(1, runs + 1):
            for case in chosen:
                for n in steps:
                    if case in failures:
                        break
                    began = time.monotonic()
                    try:
                        figures = run_loop(case, n, cluster, Path(tmp))
                    except CannotRun as reason:
                        failures[case] = str(reason)
                        print(
                            f"  run {run}: {case.label} on {case.store}: cannot run: {reason}",
                            file=sys.stderr,
                        )
                        break
                    entry = measured.setdefault(
                        (case, n),
                        Figures(
                            seconds=[], bytes_added=[], transactions=[], settings=str(figures["settings"])
                        ),
                    )
                    entry.seconds.append(float(str(figures["seconds"])))
                    entry.bytes_added.append(
                        int(str(figures["bytes_after"])) - int(str(figures["bytes_before"]))
                    )
                    if "transactions" in figures:
                        entry.transactions.append(int(str(figures["transactions"])))
                    print(
                        f"  run {run}: {case.label:28} {case.store:8} {case.durability or '-':6} N={n:<5}"
                        f" {float(str(figures['seconds'])) / n * 1e6:9.1f} us/step"
                        f"  ({time.monotonic() - began:.1f} s with start-up)",
                        file=sys.stderr,
                    )
    return measured


# --------------------------------------------------------------------------- the report


def store_column(case: Case, measured: dict[tuple[Case, int], Figures], steps: list[int]) -> str:
    if case.store == "postgres":
        return "PostgreSQL"
    settings = next((measured[case, n].settings for n in steps if (case, n) in measured), "")
    if case.system in ("ratchet", "floor"):
        return f"SQLite, durability={case.durability}"
    return (
        f"SQLite ({settings}): as Ratchet {case.durability}"
        if settings
        else f"SQLite: as Ratchet {case.durability}"
    )


def transactions_per_step(case: Case, steps: list[int], measured: dict[tuple[Case, int], Figures]) -> str:
    """On PostgreSQL, the server's transactions per step: the slope between the smallest and largest N
    (so what a loop's start and end cost cancels out), or the count / N with one N."""
    if case.store != "postgres":
        return ""
    counts = {n: statistics.median(measured[case, n].transactions) for n in steps if (case, n) in measured}
    if not counts:
        return ""
    low, high = min(counts), max(counts)
    slope = (counts[high] - counts[low]) / (high - low) if high > low else counts[high] / high
    return f"; {slope:.1f} server transactions"


def table(
    chosen: list[Case],
    steps: list[int],
    measured: dict[tuple[Case, int], Figures],
    failures: dict[Case, str],
    pick: Pick = statistics.median,
) -> list[str]:
    """One markdown table: µs per step (ratio to Ratchet read-only at equal durability), the ratios to
    Ratchet's side-effect loop and to the floor at the largest N, and bytes per step.

    `pick` chooses each time among the runs' (the median; the fastest, `min`); bytes are always the median.
    """
    top = max(steps)
    head = ["system, loop", "store", "commits per step"]
    head += [f"µs/step N={n} (x Ratchet read-only)" for n in steps]
    head += [f"x Ratchet side-effect, N={top}", f"x floor, N={top}"]
    head += ["bytes/step N=" + " / ".join(str(n) for n in steps)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for case in chosen:
        row = [case.label, store_column(case, measured, steps)]
        row.append(case.writes + transactions_per_step(case, steps, measured))
        if not any((case, n) in measured for n in steps):
            row += [f"cannot run: {failures.get(case, 'not measured')}"] + [""] * (len(steps) + 2)
            lines.append("| " + " | ".join(row) + " |")
            continue
        for n in steps:
            row.append(ratio_cell(case, case.baseline, n, measured, pick, with_figure=True))
        side_effect = Case("ratchet", "side_effect", case.store, case.durability, "", "")
        row.append(ratio_cell(case, side_effect, top, measured, pick, with_figure=False))
        row.append(ratio_cell(case, case.floor, top, measured, pick, with_figure=False))
        sizes = [
            f"{measured[case, n].bytes_per_step(n):,.0f}" if (case, n) in measured else "-" for n in steps
        ]
        row.append(" / ".join(sizes) + (f" (then cannot run: {failures[case]})" if case in failures else ""))
        lines.append("| " + " | ".join(row) + " |")
    return lines


def ratio_cell(
    case: Case,
    base: Case,
    steps: int,
    measured: dict[tuple[Case, int], Figures],
    pick: Pick,
    *,
    with_figure: bool,
) -> str:
    if (case, steps) not in measured:
        return "-"
    us = measured[case, steps].us_per_step(steps, pick)
    ratio = ""
    if (base, steps) in measured:
        ratio = f"{us / measured[base, steps].us_per_step(steps, pick):.2f}x"
    if not with_figure:
        return ratio or "-"
    return f"{us:,.0f} ({ratio})" if ratio else f"{us:,.0f}"


def machine(cluster: Cluster | None, pg_failure: str | None) -> list[str]:
    """The lines that say where and with what the figures were measured."""
    versions = []
    for package in PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    server = f"not run ({pg_failure})"
    if cluster is not None:
        with cluster.admin() as conn:
            shown = [
                str(next(iter(conn.execute(f"SHOW {name}").fetchone() or ("?",))))
                for name in ("server_version", "fsync", "synchronous_commit")
            ]
        server = (
            f"{shown[0]} (fsync={shown[1]}, synchronous_commit={shown[2]}: tests/helpers/pg.py's settings)"
        )
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"command: {shlex.join(['python', 'bench/peers.py', *sys.argv[1:]])}",
        f"machine: {os.cpu_count()} cores ({cpu_model()}), {platform.system()} {platform.machine()}, "
        f"load average {load} (1, 5, 15 min) at the start",
        f"python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, PostgreSQL {server}",
        "versions: " + ", ".join(versions),
    ]


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown model"


def _names(allowed: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        names = [name.strip() for name in text.split(",") if name.strip()]
        unknown = [name for name in names if name not in allowed]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(allowed)}, comma-separated")
        return names

    return parse


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("give step counts as whole numbers, comma-separated") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError("each step count must be at least 1")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=_counts, default=[500, 1000, 2000], help="N, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="runs of every configuration; medians shown")
    parser.add_argument("--only", type=_names(SYSTEMS), default=list(SYSTEMS), help="ratchet,langgraph,dbos")
    parser.add_argument("--stores", type=_names(STORES), default=list(STORES), help="sqlite,postgres")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    chosen = cases(args.only, args.stores)
    failures = {case: reason for case in chosen if (reason := missing_package(case.system))}
    cluster, pg_failure = None, None
    with contextlib.ExitStack() as stack:
        if "postgres" in args.stores:
            try:
                cluster = stack.enter_context(throwaway_cluster())
            except RuntimeError as refused:
                pg_failure = str(refused).splitlines()[0]
                failures.update({case: pg_failure for case in chosen if case.store == "postgres"})
        print("\n".join(machine(cluster, pg_failure)), flush=True)
        measured = measure(chosen, args.steps, args.runs, cluster, failures)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} at the end\n\nmedians of {args.runs} run(s):\n")
    print("\n".join(table(chosen, args.steps, measured, failures)))
    if args.runs > 1:
        # On a shared machine a run is slowed by whatever else runs then, never sped up: the fastest
        # run of each is the least disturbed one.
        print(f"\nthe fastest of the {args.runs} runs (bytes: medians):\n")
        print("\n".join(table(chosen, args.steps, measured, failures, pick=min)))


if __name__ == "__main__":
    main()
