"""A task's stream as the engine writes it, for the tests of its readers (CLI, API, dashboard, Python).

The readers' tests write the entries themselves, through the store's own
``append_stream``, while the task exists (queued, then running), and end the
task as a worker would, in the marks the engine writes (docs/streaming.md):
`story` is a model call whose first attempt was cut off mid-answer (its
worker killed) and made again by the resuming run with the same attempt
number, then values the workflow wrote and a second call; `stopped` is an
attempt stopped (its lease lost), made again, failed, and retried.
"""

from __future__ import annotations

from pydantic import JsonValue

from ratchet.records import StreamEntry, StreamKind, TaskStatus
from ratchet.store import StateStore

from .builders import make_task

CALL = 3  # the journal seq of the model call the story's text belongs to


def attempt(task_id: str, number: int, seq: int = CALL, value: JsonValue = None) -> StreamEntry:
    """An attempt's begin mark: `value`, else ``{}`` as the engine writes for a first run's attempt."""
    mark = {} if value is None else value
    return StreamEntry(task_id=task_id, kind=StreamKind.ATTEMPT, seq=seq, attempt=number, value=mark)


def text(task_id: str, number: int, piece: str, seq: int = CALL) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.TEXT, seq=seq, attempt=number, value=piece)


def end(
    task_id: str, number: int, outcome: str = "succeeded", seq: int = CALL, **more: JsonValue
) -> StreamEntry:
    """An attempt's end: ``{"outcome": outcome}`` and `more` (``cut_at``, ``error_type``, ``dropped``)."""
    return StreamEntry(
        task_id=task_id,
        kind=StreamKind.END,
        seq=seq,
        attempt=number,
        value={"outcome": outcome, **more},
    )


def value(task_id: str, key: str, written: JsonValue, seq: int = CALL + 1) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.VALUE, seq=seq, key=key, value=written)


def story(task_id: str) -> list[list[StreamEntry]]:
    """The batches of the story, in the order they are written (offsets 0 to 13)."""
    return [
        [attempt(task_id, 1), text(task_id, 1, "The ans")],
        [text(task_id, 1, "wer is 4")],  # cut here, at offset 2: its worker was killed
        # The resuming run ends the cut attempt, then makes it again with the same number.
        [
            end(task_id, 1, "interrupted", cut_at=2),
            attempt(task_id, 1, value={"restarted": True, "cut_at": 2}),
        ],
        [text(task_id, 1, "The "), text(task_id, 1, "answer ")],
        [text(task_id, 1, "is 42.")],
        [end(task_id, 1), value(task_id, "progress", {"done": 1, "of": 2})],
        [value(task_id, "note", 'ünïcode \u2028 and a quote "', seq=CALL + 2)],
        [attempt(task_id, 1, seq=7), text(task_id, 1, "Second call.", seq=7), end(task_id, 1, seq=7)],
    ]


STORY_ANSWER = "The answer is 42."


def stopped(task_id: str) -> list[list[StreamEntry]]:
    """An attempt stopped (its lease lost), made again by the next run, failed (one entry lost), retried."""
    return [
        [attempt(task_id, 1), text(task_id, 1, "Half an ans"), end(task_id, 1, "interrupted")],
        [attempt(task_id, 1, value={"restarted": True}), text(task_id, 1, "An ans")],
        [end(task_id, 1, "failed", error_type="ModelUnavailable", dropped=1)],
        [attempt(task_id, 2), text(task_id, 2, "The answer."), end(task_id, 2)],
    ]


async def new_task(store: StateStore, task_id: str = "t-stream") -> str:
    """A queued task, ready to be written to."""
    await store.create_task(make_task(task_id))
    return task_id


async def start_task(store: StateStore, task_id: str) -> None:
    """Move the task to running, as a worker that claims it does."""
    task = await store.get_task(task_id)
    await store.update_task(task.transition(TaskStatus.RUNNING))


async def finish_task(store: StateStore, task_id: str) -> None:
    """End the task (completed), starting it first if it is queued."""
    task = await store.get_task(task_id)
    if task.status is TaskStatus.QUEUED:
        task = await store.update_task(task.transition(TaskStatus.RUNNING))
    await store.update_task(task.transition(TaskStatus.COMPLETED))
