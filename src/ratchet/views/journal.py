"""A task's journal as people and programs read it: each call, which run recorded it, and its attempts.

`ratchet journal` (cli/journal.py) and the HTTP API (``GET /api/tasks/{id}/journal``
and ``/timeline``, serve/journal_routes.py and serve/view_routes.py) read it
through this module only, so each says the same of every call.

What each entry can honestly say, from what the store keeps:

- **run**: the lease (a worker's claim, numbered by its token) under which
  the call was recorded: the last claim granted at or before the call
  started. None when no claim was made before it (a task run in-process
  before leases were taken).
- **replayed**: the call was recorded by an earlier run than the task's
  latest one. Every later run that reached this seq took the recorded result
  instead of calling again (the durability contract's replay); the journal
  keeps one row per call, so it cannot say how many runs did.
- **in doubt**: a tool call started and never finished, with no worker
  holding the task now: nobody knows whether it happened (`ratchet resolve`).
- **was in doubt**: how a call found in doubt was settled, from the event
  that settled it: ``run again`` (an idempotent or key-taking tool run again
  on resume, ``in_doubt_rerun``; or a person's ``ratchet resolve --retry``),
  ``skipped`` or ``given a result`` (``ratchet resolve``, the ``resolved``
  event).
- **retried**: the journal keeps a call's last attempt; each earlier one is
  put back from the ``retry`` event that recorded its failure (its start in
  the event's data, its end the event's time).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from ..errors import CorruptRecord
from ..records import Event, Lease, Operation, OpKind, OpStatus, Task
from ..store import StoreOps
from .record_json import iso_time, operation_json

__all__ = [
    "PREVIEW_CHARS",
    "EarlierAttempt",
    "Journal",
    "JournalEntry",
    "call_attempts",
    "journal_entry_json",
    "journal_events",
    "load_journal",
    "preview",
    "step_of",
]

PREVIEW_CHARS = 200
_EVENT_PAGE = 1000


def preview(value: Any, *, chars: int = PREVIEW_CHARS) -> str | None:
    """`value` as JSON text, cut to `chars` characters (None stays None)."""
    if value is None:
        return None
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _seconds(start: dt.datetime | None, end: dt.datetime | None) -> float | None:
    return None if start is None or end is None else max((end - start).total_seconds(), 0.0)


def _time(text: Any) -> dt.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class EarlierAttempt:
    """An attempt of a call that failed and was tried again, from its ``retry`` event."""

    attempt: int
    started_at: dt.datetime | None  # None: written by a Ratchet that did not record it
    failed_at: dt.datetime
    error: str

    @property
    def duration(self) -> float | None:
        return _seconds(self.started_at, self.failed_at)


@dataclass(frozen=True)
class JournalEntry:
    """One journaled call and what the store tells of it (see the module's docstring)."""

    op: Operation
    run: int | None
    replayed: bool
    in_doubt: bool
    earlier: tuple[EarlierAttempt, ...]
    was_in_doubt: str | None = None  # how it was settled: "run again", "skipped", "given a result"

    @property
    def duration(self) -> float | None:
        """Seconds from the last attempt's start to its end (None while it runs)."""
        return _seconds(self.op.started_at, self.op.finished_at)

    @property
    def retried(self) -> bool:
        """Whether any attempt failed and was tried again, or a retry is due."""
        return bool(self.earlier) or self.op.attempt > 1 or self.op.retry_pending


@dataclass(frozen=True)
class Journal:
    """A task's calls in seq order, with the runs (leases) that recorded them."""

    task: Task
    entries: list[JournalEntry]
    runs: list[Lease]


def _earlier_attempts(op: Operation, retries: list[Event]) -> tuple[EarlierAttempt, ...]:
    found = []
    for event in sorted(retries, key=lambda e: e.seq):
        attempt = event.data.get("attempt")
        if not isinstance(attempt, int) or attempt >= op.attempt:
            continue  # the journal row tells this attempt itself, with its exact times
        found.append(EarlierAttempt(attempt, _time(event.data.get("started_at")), event.time, event.message))
    return tuple(found)


def _by_seq(events: list[Event], kind: str) -> dict[int, list[Event]]:
    grouped: dict[int, list[Event]] = {}
    for event in events:
        seq = event.data.get("seq")
        if event.kind == kind and isinstance(seq, int):
            grouped.setdefault(seq, []).append(event)
    return grouped


def _settled(reruns: list[Event], resolutions: list[Event]) -> str | None:
    """How a call found in doubt was settled, by the last event that settled it (None: never in doubt)."""
    found = sorted([*reruns, *resolutions], key=lambda e: e.seq)
    if not found:
        return None
    last = found[-1]
    if last.kind == "in_doubt_rerun":
        return "run again"
    how = last.data.get("how")
    return "run again" if how == "run it again" else how if isinstance(how, str) else "resolved"


def _run_of(op: Operation, runs: list[Lease]) -> int | None:
    started = [
        lease.token for lease in runs if lease.granted_at is not None and lease.granted_at <= op.started_at
    ]
    return max(started, default=None)


_JOURNAL_EVENTS = frozenset({"retry", "in_doubt_rerun", "resolved"})


async def journal_events(tx: StoreOps, task_id: str) -> list[Event]:
    """The task's events that tell of its calls' attempts and doubts, read a page at a time.

    An unreadable event is skipped: the journal shows what can be read.
    """
    found: list[Event] = []
    after = 0
    while True:
        unreadable: list[CorruptRecord] = []
        page = await tx.list_events(
            task_id, after_seq=after, limit=_EVENT_PAGE, unreadable=unreadable, kinds=_JOURNAL_EVENTS
        )
        found.extend(page)
        seqs = [event.seq for event in page] + [int(row.key[1]) for row in unreadable]
        if len(seqs) < _EVENT_PAGE:
            return found
        after = max(seqs)


async def load_journal(
    tx: StoreOps, task_id: str, *, after_seq: int = -1, limit: int | None = None
) -> Journal:
    """Read the task's journal from one read transaction `tx`, so its parts agree.

    Args:
        after_seq: only the calls after this seq.
        limit: at most this many calls (all when None).

    Raises:
        TaskNotFound: no task has that id.
    """
    task = await tx.get_task(task_id)
    ops = await tx.list_ops(task_id, after_seq=after_seq, limit=limit)
    runs = await tx.lease_history(task_id)
    lease = await tx.get_lease(task_id)
    held = lease is not None and lease.is_live()
    events = await journal_events(tx, task_id)
    retries = _by_seq(events, "retry")
    reruns, resolutions = _by_seq(events, "in_doubt_rerun"), _by_seq(events, "resolved")
    latest = max((run.token for run in runs), default=None)
    entries = []
    for op in ops:
        run = _run_of(op, runs)
        entries.append(
            JournalEntry(
                op=op,
                run=run,
                replayed=run is not None and latest is not None and run < latest,
                in_doubt=op.status is OpStatus.STARTED and op.kind is OpKind.TOOL and not held,
                earlier=_earlier_attempts(op, retries.get(op.seq, [])),
                was_in_doubt=_settled(reruns.get(op.seq, []), resolutions.get(op.seq, [])),
            )
        )
    return Journal(task=task, entries=entries, runs=runs)


def journal_entry_json(entry: JournalEntry, *, full: bool) -> dict[str, Any]:
    """One call as ``GET /api/tasks/{id}/journal`` and ``ratchet journal --json`` give it.

    Its `operation_json` record (``input`` and ``output`` only with `full`),
    the step it ran in (from 1), its duration and previews, the run that
    recorded it, and its earlier attempts.
    """
    op = entry.op
    shown = operation_json(op)
    shown["step"] = step_of(op)
    shown["duration_seconds"] = entry.duration
    shown["input_preview"] = preview(op.input)
    shown["output_preview"] = preview(op.output)
    if not full:
        del shown["input"], shown["output"]
    shown["run"] = entry.run
    shown["replayed"] = entry.replayed
    shown["in_doubt"] = entry.in_doubt
    shown["was_in_doubt"] = entry.was_in_doubt
    shown["retried"] = entry.retried
    shown["earlier_attempts"] = [
        {
            "attempt": attempt.attempt,
            "started_at": iso_time(attempt.started_at),
            "failed_at": iso_time(attempt.failed_at),
            "duration_seconds": attempt.duration,
            "error": attempt.error,
        }
        for attempt in entry.earlier
    ]
    return shown


def step_of(op: Operation) -> int | None:
    """The step a call ran in, numbered from 1 as people count (None: outside any step)."""
    index = op.meta.get("step")
    return index + 1 if isinstance(index, int) and not isinstance(index, bool) else None


def call_attempts(entries: list[JournalEntry]) -> list[dict[str, Any]]:
    """One record per attempt of each call, in seq then attempt order (``/timeline``).

    An attempt that failed and was tried again comes from its ``retry`` event;
    the call's last attempt comes from its journal row. ``step`` is the step
    the call ran in (from 1; null outside any step).
    """
    attempts = []
    for entry in entries:
        op = entry.op
        step = step_of(op)
        for attempt in entry.earlier:
            attempts.append(
                {
                    "seq": op.seq,
                    "step": step,
                    "kind": str(op.kind),
                    "name": op.name,
                    "attempt": attempt.attempt,
                    "status": "failed",
                    "retried": True,
                    "started_at": iso_time(attempt.started_at),
                    "finished_at": iso_time(attempt.failed_at),
                    "duration_seconds": attempt.duration,
                    "error": attempt.error,
                }
            )
        attempts.append(
            {
                "seq": op.seq,
                "step": step,
                "kind": str(op.kind),
                "name": op.name,
                "attempt": op.attempt,
                "status": str(op.status),
                "retried": op.retry_pending,
                "started_at": iso_time(op.started_at),
                "finished_at": iso_time(op.finished_at),
                "duration_seconds": entry.duration,
                "error": op.error,
            }
        )
    return attempts
