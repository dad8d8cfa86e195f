"""The rows a LangGraph checkpointer keeps in a Ratchet store (ratchet.integrations.langgraph).

LangGraph's data has tables of its own (schema version 14): its checkpoints,
the pending writes of each checkpoint, and the channel values the
checkpoints name by hash. The store knows nothing of LangGraph's types: a
checkpoint's and a value's bodies are bytes its serializer wrote, with the
serializer's type tag beside them; only the hashes a checkpoint names
(`LangGraphCheckpoint.values`) and the link of a value to the one it extends
(`LangGraphValue.prev`) mean something to the store, which follows them to
read a value whole and to drop the values no checkpoint or pending write of a
thread reaches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["LangGraphCheckpoint", "LangGraphValue", "LangGraphWrite"]


@dataclass(frozen=True, slots=True)
class LangGraphCheckpoint:
    """One checkpoint of a thread's namespace.

    Attributes:
        thread_id: the thread.
        ns: the checkpoint namespace ("" for the root graph).
        checkpoint_id: LangGraph's id, which sorts in the order checkpoints were made.
        parent_id: the checkpoint this one follows, if any.
        run_id: the run that made it (from its metadata), if any.
        type: the serializer's type tag of `body`.
        body: the checkpoint without its channel values, serialized.
        metadata: its metadata as a JSON object.
        values: a JSON object: channel name -> the hash of its value in the thread's values.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    run_id: str | None
    type: str
    body: bytes
    metadata: str
    values: str

    def value_hashes(self) -> dict[str, str]:
        """Channel name -> the hash of its value."""
        found: dict[str, str] = json.loads(self.values)
        return found


@dataclass(frozen=True, slots=True)
class LangGraphWrite:
    """A pending write of a task, kept with the checkpoint it follows.

    `idx` is the write's index among its task's writes, or a negative number
    for LangGraph's special channels (an error, an interrupt ...), which a
    later write of the same task replaces.
    """

    thread_id: str
    ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    type: str
    value: bytes
    task_path: str
    value_hash: str | None = None
    """When set, the value is the thread's value of that hash (and `value` is empty)."""


@dataclass(frozen=True, slots=True)
class LangGraphValue:
    """A channel value of a thread, stored once under its hash.

    With `prev` None, `body` is the whole value. Otherwise the value is a list
    that extends the value `prev` names, and `body` holds the items it adds,
    or, with `items` set, the value `items` names is the list of those items
    (a list of new items stored once for the pending write that brought them
    and the value they extend).
    """

    thread_id: str
    hash: str
    prev: str | None
    type: str
    body: bytes
    items: str | None = None
