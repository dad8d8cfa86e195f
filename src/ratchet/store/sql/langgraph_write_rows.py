"""A task's pending writes on a checkpoint as one SQL row (langgraph.py).

LangGraph writes a task's pending writes together (``put_writes``), and a
step's task writes two or more (a channel's value, the branch it takes). A
row per write repeats the thread, namespace, checkpoint and task ids (about
80 bytes) in the row and again in its primary key's index (PostgreSQL's
index on five text columns was as big as the rows). So an SQL store keeps
one row per (checkpoint, task): its writes packed in one blob, and the
hashes of the values they name in a JSON array beside it, which the SQL that
drops unreached values reads.

Each write in the blob: its index (zigzag varint), its channel and the
serializer's type tag (varint length, UTF-8), then either a 0 byte and the
value's bytes (varint length first), or a 1 byte: the value is the thread's
value named by the next hash of the array.

Stored, the task's path (varint length, UTF-8) and the packed writes are
deflated together (langgraph_deflate.py) when that is shorter, and the row's
``task_path`` column is then empty: a row stored before, or one that did not
compress, has its path in the column and its writes packed as they are.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Sequence

from ...errors import CorruptRecord
from ...records import LangGraphWrite
from .langgraph_deflate import WRITES, deflate, deflated, inflate

__all__ = ["merge_writes", "pack_writes", "unpack_writes"]


def merge_writes(stored: Sequence[LangGraphWrite], new: Iterable[LangGraphWrite]) -> list[LangGraphWrite]:
    """`stored` with `new` added as LangGraph keeps them: a write whose index the task already wrote is
    dropped, unless the index is a special one (negative), which replaces the stored write."""
    merged = {write.idx: write for write in stored}
    for write in new:
        if write.idx < 0 or write.idx not in merged:
            merged[write.idx] = write
    return list(merged.values())


def pack_writes(writes: Sequence[LangGraphWrite], task_path: str) -> tuple[str, bytes, str | None]:
    """The task path column, the blob and the JSON array of value hashes (None: no write names one) of
    one task's writes."""
    out = bytearray()
    hashes: list[str] = []
    for write in writes:
        _varint(out, (write.idx << 1) ^ (write.idx >> 63))
        for text in (write.channel, write.type):
            encoded = text.encode()
            _varint(out, len(encoded))
            out += encoded
        if write.value_hash is not None:
            out.append(1)
            hashes.append(write.value_hash)
        else:
            out.append(0)
            _varint(out, len(write.value))
            out += write.value
    names = json.dumps(hashes, separators=(",", ":")) if hashes else None
    path = bytearray()
    _varint(path, len(task_path.encode()))
    path += task_path.encode()
    stored = deflate(bytes(path + out), WRITES)
    if len(stored) < len(out):
        return "", stored, names
    return task_path, bytes(out), names


def unpack_writes(
    thread_id: str, ns: str, checkpoint_id: str, task_id: str, task_path: str, blob: bytes, hashes: str | None
) -> list[LangGraphWrite]:
    """The writes of a row `pack_writes` made."""
    names: list[str] = json.loads(hashes) if hashes else []
    writes = []
    at, taken = 0, 0
    try:
        if deflated(blob):  # deflated, with the task's path first
            blob = inflate(blob, WRITES)
            size, at = _read_varint(blob, 0)
            task_path = blob[at : at + size].decode()
            at += size
        while at < len(blob):
            zigzag, at = _read_varint(blob, at)
            texts = []
            for _ in range(2):
                size, at = _read_varint(blob, at)
                texts.append(blob[at : at + size].decode())
                at += size
            kind = blob[at]
            at += 1
            value, value_hash = b"", None
            if kind == 1:
                value_hash = names[taken]
                taken += 1
            else:
                size, at = _read_varint(blob, at)
                value = bytes(blob[at : at + size])
                at += size
            idx = (zigzag >> 1) ^ -(zigzag & 1)
            writes.append(
                LangGraphWrite(
                    thread_id,
                    ns,
                    checkpoint_id,
                    task_id,
                    idx,
                    texts[0],
                    texts[1],
                    value,
                    task_path,
                    value_hash,
                )
            )
    except (IndexError, UnicodeDecodeError, zlib.error) as exc:
        what = f"writes of task {task_id} on checkpoint {checkpoint_id}"
        raise CorruptRecord(
            what, "langgraph_writes", (thread_id, ns, checkpoint_id, task_id), str(exc)
        ) from exc
    return writes


def _varint(out: bytearray, number: int) -> None:
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)


def _read_varint(blob: bytes, at: int) -> tuple[int, int]:
    number, shift = 0, 0
    while True:
        byte = blob[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7
