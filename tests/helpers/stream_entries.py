"""A task's stream as the engine writes it, for the tests of its readers (CLI, API, dashboard, Python).

The readers' tests write the entries themselves, through the store's own
``append_stream``, while the task exists (queued, then running), and end the
task as a worker would: `STORY` is a model call whose first attempt was cut
off mid-answer (its worker killed), retried as attempt 2, then a value the
workflow wrote.
"""

from __future__ import annotations

from pydantic import JsonValue

from ratchet.records import StreamEntry, StreamKind, TaskStatus
from ratchet.store import StateStore

from .builders import make_task

CALL = 3  # the journal seq of the model call the story's text belongs to


def attempt(task_id: str, number: int, seq: int = CALL, value: JsonValue = None) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.ATTEMPT, seq=seq, attempt=number, value=value)


def text(task_id: str, number: int, piece: str, seq: int = CALL) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.TEXT, seq=seq, attempt=number, value=piece)


def end(task_id: str, number: int, outcome: str = "succeeded", seq: int = CALL) -> StreamEntry:
    return StreamEntry(
        task_id=task_id, kind=StreamKind.END, seq=seq, attempt=number, value={"outcome": outcome}
    )


def value(task_id: str, key: str, written: JsonValue, seq: int = CALL + 1) -> StreamEntry:
    return StreamEntry(task_id=task_id, kind=StreamKind.VALUE, seq=seq, key=key, value=written)


def story(task_id: str) -> list[list[StreamEntry]]:
    """The batches of the story, in the order they are written (offsets 0 to 12)."""
    return [
        [attempt(task_id, 1), text(task_id, 1, "The ans")],
        [text(task_id, 1, "wer is 4")],  # cut here: its worker was killed
        [attempt(task_id, 2, value={"after": {"attempt": 1, "offset": 2}})],
        [text(task_id, 2, "The "), text(task_id, 2, "answer ")],
        [text(task_id, 2, "is 42.")],
        [end(task_id, 2), value(task_id, "progress", {"done": 1, "of": 2})],
        [value(task_id, "note", 'ünïcode \u2028 and a quote "', seq=CALL + 2)],
        [attempt(task_id, 1, seq=7), text(task_id, 1, "Second call.", seq=7), end(task_id, 1, seq=7)],
    ]


STORY_TEXT_OF_ATTEMPT_2 = "The answer is 42."


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
