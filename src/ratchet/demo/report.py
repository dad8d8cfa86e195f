"""What the demo prints: each phase in plain words, and the tables that prove the point.

`Report` writes to the Rich console it is given (the CLI gives its own), so
the demo knows nothing of the command line.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..printable import plain
from ..records import Event, OpStatus, StepStatus
from .findings import CRASHED_TOOL, CrashState, How, OpRun, ToolTally
from .ledger import Effect, Invocation
from .paths import DemoPaths

__all__ = ["Report"]

_HOW_STYLES = {How.REPLAYED: "cyan", How.RERUN: "yellow", How.LIVE: "green"}


def _label(kind: str, name: str) -> str:
    """``model:plan`` as is, ``tool apply_manifest`` with its kind."""
    return name if name.startswith(f"{kind}:") else f"{kind} {name}"


class Report:
    """Tells the demo's story on a console, phase by phase."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def flush(self) -> None:
        """Push what was printed out now: a worker's lines interleave with the story."""
        self.console.file.flush()

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style=style), soft_wrap=True)
        self.flush()

    def intro(self, paths: DemoPaths) -> None:
        self.console.print(
            Text("Ratchet demo: deploy service-x to staging, crash in the middle, resume.", style="bold")
        )
        self._say(
            "An agent plans the deploy into five steps and calls five tools. Its worker is killed with "
            "SIGKILL halfway through; a second worker resumes the task from its journal. The ledger "
            "(a stand-in for the registry and the cluster) then shows whether any side effect "
            "happened twice. No API key, no network: the model is scripted."
        )
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column(overflow="fold")
        grid.add_row("directory", str(paths.directory))
        grid.add_row("store", paths.store_url)
        grid.add_row("ledger", f"{paths.ledger}  (what the tools did, by idempotency key)")
        grid.add_row("model", f"scripted:{paths.script}")
        self.console.print(grid)
        self.flush()

    def phase(self, number: int, title: str) -> None:
        self.console.print()
        self.console.rule(Text(f"{number}. {title}", style="bold"), align="left")
        self.flush()

    def submitted(self, task_id: str) -> None:
        self._say(
            f'Submitted task {task_id}: "Deploy service-x to staging". It is queued in the store; '
            "nothing runs it yet."
        )

    def worker_started(self, number: int, pid: int, argv: Sequence[str], *, after: int | None) -> None:
        shown = shlex.join(["python", *argv[1:]])
        self._say(f"Worker {number} (pid {pid}): {shown}")
        if after is not None:
            self._say(
                f"It takes the task over at once: the lease still names worker 1 (pid {after}), "
                "a process that no longer exists, so there is no lease to wait out."
            )

    def worker_line(self, number: int, line: str) -> None:
        self.console.print(Text(f"  worker {number} | ", style="dim") + plain(line), soft_wrap=True)
        self.flush()

    def apply_started(self) -> None:
        self._say(
            "The ledger shows apply_manifest has started (an invocation row) and not yet taken "
            "effect (no effect row): the rollout is in flight.",
            style="yellow",
        )

    def killed(self, pid: int) -> None:
        self._say(
            f"The worker (pid {pid}) was killed with SIGKILL in the middle of apply_manifest: "
            "no cleanup, no last write, as in a power cut or an OOM kill.",
            style="bold red",
        )

    def crash_state(
        self, crash: CrashState, invocations: Sequence[Invocation], effects: Sequence[Effect]
    ) -> None:
        task = crash.task
        current = next((s for s in crash.steps if s.status is StepStatus.CURRENT), None)
        holder = f"; its lease still names pid {crash.lease.pid}" if crash.lease else ""
        self._say(f"Task status: {task.status_text} (no process runs it any more{holder}).")
        if current is not None:
            self._say(f"Current step: {current.index + 1} of {len(crash.steps)}, {current.name}.")
        done = [op for op in crash.ops if op.status is not OpStatus.STARTED]
        span = f" (seq {done[0].seq}-{done[-1].seq})" if done else ""
        self._say(
            f"The journal holds {len(crash.ops)} operations, {len(done)} of them with their "
            f"results{span}. Its last ones:"
        )
        table = Table()
        for header in ("seq", "operation", "status", "idempotency key"):
            table.add_column(header, no_wrap=True)
        for op in crash.ops[-3:]:
            in_flight = op.status is OpStatus.STARTED
            table.add_row(
                str(op.seq),
                _label(op.kind, op.name),
                Text(
                    "started, no result" if in_flight else str(op.status),
                    style="bold yellow" if in_flight else "green",
                ),
                op.idempotency_key if op.kind == "tool" else "",
            )
        self.console.print(table)
        runs = sum(1 for i in invocations if i.tool == CRASHED_TOOL)
        applied = sum(1 for e in effects if e.tool == CRASHED_TOOL)
        self._say(
            "The journal shows apply_manifest's intent without a result: from the journal alone, "
            "the rollout may or may not have happened. Ratchet does not guess: apply_manifest takes "
            "its idempotency key, so the next worker runs it again with the same key, and the "
            f"outside system keeps one effect per key. (The ledger, which Ratchet never reads, "
            f"has {runs} start and {applied} effects of it.)"
        )

    def worker_exited(self, number: int, pid: int, code: int) -> None:
        how = "the task completed" if code == 0 else f"exit code {code}"
        self._say(f"Worker {number} (pid {pid}) finished: {how}.", style="green" if code == 0 else "red")

    def ledger_table(self, tallies: Sequence[ToolTally]) -> None:
        self._say("The ledger: each tool's effects, one row per idempotency key, and how often it ran.")
        table = Table()
        for header in ("tool", "idempotency key", "effects", "invocations"):
            table.add_column(header, no_wrap=True)
        for row in tallies:
            crashed = row.tool == CRASHED_TOOL
            table.add_row(
                row.tool,
                ", ".join(row.keys) or "-",
                str(row.effects),
                Text(str(row.invocations), style="bold yellow" if crashed else ""),
            )
        self.console.print(table)
        self.flush()
        for row in tallies:
            if row.tool == CRASHED_TOOL:
                took = "once" if row.effects == 1 else f"{row.effects} times"
                self._say(
                    f"apply_manifest was invoked {row.invocations} times but took effect {took}: "
                    "the first run was killed before its effect, and the second carried the "
                    f"same key, {', '.join(row.keys)}; had the first finished, the second would "
                    "have changed nothing."
                )

    def resume_table(self, runs: Sequence[OpRun], events: Sequence[Event]) -> None:
        replayed = [r for r in runs if r.how is How.REPLAYED]
        rerun = [r for r in runs if r.how is How.RERUN]
        live = [r for r in runs if r.how is How.LIVE]
        self._say(
            f"What the resume did, from the journal and the events: it replayed {len(replayed)} "
            f"operations recorded before the crash (their results came from the journal: no model "
            f"call, no tool call), ran {len(rerun)} again with its idempotency key, and ran "
            f"{len(live)} live."
        )
        table = Table()
        for header in ("seq", "operation", "attempt", "resume"):
            table.add_column(header, no_wrap=True)
        for run in runs:
            table.add_row(
                str(run.seq),
                _label(run.kind, run.name),
                str(run.attempt),
                Text(str(run.how), style=_HOW_STYLES[run.how]),
            )
        self.console.print(table)
        for event in events:
            if event.kind == "in_doubt_rerun":
                self._say(f"Event {event.seq}: {event.message}")
        self.flush()

    def verdict(self, tallies: Sequence[ToolTally], elapsed: float) -> None:
        effects = sum(row.effects for row in tallies)
        self.console.print()
        self._say(
            f"Verdict: every effect exactly once ({effects} effects for {len(tallies)} tools, "
            f"one crash, demo took {elapsed:.1f} s).",
            style="bold green",
        )
