"""The small columns of LangGraph's rows, deflated when that is shorter (langgraph.py, langgraph_write_rows).

A step's checkpoint row carries, beside its compressed body, LangGraph's
metadata as JSON (``{"source":"loop","step":12,"parents":{}}``), the task path
of its writes (``~__pregel_pull, agent``) and the writes packed (channel names,
the serializer's type tags): about 125 bytes a step of the same words. Raw
deflate primed with those words (a dictionary per column) takes them to about
40. The stored bytes are ``0xFF`` then the deflated bytes: no UTF-8 text starts
with that byte, nor a packed write (its first byte is its index's zigzag
varint, which would need an index of -128 or below; LangGraph's special
indexes are -1 to -4), so a row stored before (plain JSON, text, packed
writes) reads as it is.

The dictionaries are part of the stored format: a row is read with exactly
these bytes, forever. A better one needs a marker of its own.
"""

from __future__ import annotations

import zlib

__all__ = ["METADATA", "WRITES", "deflate", "deflated", "inflate"]

_MARK = b"\xff"
_RAW = -15  # zlib's wbits for raw deflate with a 32 KB window

METADATA = (
    b'{"source":"input","step":-1,"parents":{}}{"source":"fork","step":{"source":"update","step":'
    b'"run_id":"","thread_id":"","checkpoint_ns":"","writes":null,"user_id":"","assistant_id":"",'
    b'"graph_id":"",{"source":"loop","step":1,"parents":{}}'
)
"""Words of LangGraph's checkpoint metadata (its sources, keys it copies from a run's config)."""

WRITES = (
    b"\x0e__pregel_tasks\x07msgpack\x00\x09__error__\x0d__interrupt__\x0a__resume__\x05value"
    b"\x0d~__pregel_push\x15~__pregel_pull, tools\x04null\x00\x00\x07msgpack\x00\x01"
    b"\x15~__pregel_pull, agent\x00\x08messages\x07msgpack\x01\x02\x10branch:to:"
)
"""Words of a task's path and its packed writes (LangGraph's channels and the serializer's tags)."""


def deflate(data: bytes, dictionary: bytes) -> bytes:
    """`data` as stored: deflated after the mark when that is shorter, else as it is."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, _RAW, zdict=dictionary)
    packed = _MARK + compressor.compress(data) + compressor.flush()
    return packed if len(packed) < len(data) else data


def deflated(stored: bytes) -> bool:
    """Whether `deflate` deflated `stored` (else it is as it was given)."""
    return stored.startswith(_MARK)


def inflate(stored: bytes, dictionary: bytes) -> bytes:
    """The bytes `deflate` was given."""
    if not deflated(stored):
        return stored
    decompressor = zlib.decompressobj(_RAW, zdict=dictionary)
    return decompressor.decompress(stored[1:]) + decompressor.flush()
