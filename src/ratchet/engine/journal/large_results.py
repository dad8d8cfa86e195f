"""Large tool results, kept once as an artifact: the journal holds a reference, replay reads them back.

A tool result larger than the task's ``Budget.max_inline_result_bytes`` (a
string as UTF-8 text, anything else as JSON) is stored as the artifact
``<task>-result-<seq>`` in the transaction that records the call's outcome.
The operation's ``output`` is then None and ``meta["result_artifact"]`` says
where the value is: the artifact's id, its size, how it is encoded, and a
preview (its first 200 characters, on one line). Live, the workflow gets the
value the tool returned; on replay the artifact is read back and decoded, so
it gets the same value, as JSON gives it back (as for any recorded result).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal

from pydantic import JsonValue

from ...records import Artifact, ArtifactRef, Operation, Record
from ...records.compact_json import encode as _encode
from ...store import StateStore

__all__ = ["RESULT_ARTIFACT", "StoredResult", "read_back", "result_reference", "set_aside", "stored_result"]

RESULT_ARTIFACT = "result_artifact"
PREVIEW_CHARS = 200

# As the SQL stores write JSON (store/sql/rows.py): the artifact's size is what the journal would have held.


class StoredResult(Record):
    """Where a result set aside lives (``Operation.meta["result_artifact"]``)."""

    artifact_id: str
    bytes: int
    encoding: Literal["text", "json"]
    preview: str
    step: int | None = None  # the index of the step the call was made in (None: none, or set aside before)


def set_aside(
    op: Operation, limit: int, *, step: int | None = None
) -> tuple[Operation, Artifact, bytes] | None:
    """The succeeded `op` with its output moved to an artifact, the artifact and its body.

    The artifact records `step`, the index of the step that made the call.

    None when the output fits in `limit` bytes (it stays inline), or is not
    something JSON can hold (the store says so, as it would have).
    """
    output = op.output
    encoding: Literal["text", "json"]
    if isinstance(output, str):
        if len(output) * 4 <= limit:  # at most 4 bytes a character: no need to encode it
            return None
        body, encoding = output.encode("utf-8", "surrogatepass"), "text"
    elif isinstance(output, dict | list):
        if _surely_fits(output, limit):  # most results: the store encodes them once, not here as well
            return None
        try:
            body, encoding = _encode(output).encode("utf-8", "surrogatepass"), "json"
        except (TypeError, ValueError):
            return None
    else:
        return None  # a number, a boolean or None is small
    if len(body) <= limit:
        return None
    preview = body[: PREVIEW_CHARS * 4].decode("utf-8", "ignore")[:PREVIEW_CHARS].replace("\n", " ")
    stored = StoredResult(
        artifact_id=f"{op.task_id}-result-{op.seq}",
        bytes=len(body),
        encoding=encoding,
        preview=preview,
        step=step,
    )
    artifact = Artifact(
        id=stored.artifact_id,
        task_id=op.task_id,
        type=f"tool_result.{op.name}",
        summary=preview,
        bytes=len(body),
        step=step,
    )
    where = stored.model_dump(exclude_none=True)  # no step: kept as before steps were recorded
    moved = op.model_copy(update={"output": None, "meta": {**op.meta, RESULT_ARTIFACT: where}})
    return moved, artifact, body


# Bounds of a value's JSON in UTF-8, for `_surely_fits`: a string's character takes at most 6 bytes
# (``\\u001f``); a float's repr, a boolean, null or an int below `_SMALL_INT` at most 24.
_WIDEST_CHAR = 6
_SCALAR_BYTES = 24
_SMALL_INT = 10**20
_SCALARS = (type(None), bool, float)


def _surely_fits(value: dict[str, JsonValue] | list[JsonValue], limit: int) -> bool:
    """Whether a flat dict or list of strings and scalars is, as JSON, within `limit` bytes for sure.

    A bound of its encoding counted without encoding it, so a result that
    fits (most) is encoded once, by the store; False for anything else (a
    nested value, a large int), which is then encoded and weighed.
    """
    total = 2 + 2 * len(value)  # the brackets, each item's comma (and a dict's colon)
    if isinstance(value, dict):
        for key in value:
            if type(key) is not str:  # JSON writes other keys as text of their own: weighed encoded
                return False
            total += len(key) * _WIDEST_CHAR + 2
        items: Iterable[JsonValue] = value.values()
    else:
        items = value
    for item in items:
        if type(item) is str:
            total += len(item) * _WIDEST_CHAR + 2
        elif type(item) in _SCALARS or (type(item) is int and -_SMALL_INT < item < _SMALL_INT):
            total += _SCALAR_BYTES
        else:
            return False
    return total <= limit


def stored_result(op: Operation) -> StoredResult | None:
    """Where `op`'s result was set aside, or None when the journal holds it inline."""
    found = op.meta.get(RESULT_ARTIFACT)
    return None if found is None else StoredResult.model_validate(found)


async def read_back(store: StateStore, stored: StoredResult) -> JsonValue:
    """The value a result set aside had, decoded from its artifact."""
    body = await store.read_artifact(stored.artifact_id)
    if stored.encoding == "text":
        return body.decode("utf-8", "surrogatepass")
    value: JsonValue = json.loads(body)
    return value


def result_reference(op: Operation | None) -> ArtifactRef | None:
    """The artifact the result of the recorded call `op` is kept in, if it was set aside; else None."""
    stored = None if op is None else stored_result(op)
    if op is None or stored is None:
        return None
    return ArtifactRef(
        artifact_id=stored.artifact_id,
        type=f"tool_result.{op.name}",
        summary=stored.preview,
        bytes=stored.bytes,
        step=stored.step,
    )
