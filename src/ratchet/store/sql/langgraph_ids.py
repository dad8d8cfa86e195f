"""LangGraph's checkpoint and task ids as an SQL store keeps them: a UUID in its 16 bytes.

LangGraph's ids are UUIDs written as 36 characters (a checkpoint's: version
6, ordered by time), and a step's rows hold four of them (a checkpoint's id
and its parent's; its pending writes' checkpoint and task ids), in rows and
in primary-key indexes. An SQL store keeps a UUID written in lowercase as its
16 bytes, which sort as the text does, and any other id as its UTF-8 bytes,
with a 0 byte after it when it has 16 bytes or more, so that no other id
reads back as a UUID (ids of both kinds in one namespace sort UUIDs by
their bytes against the others' text: LangGraph makes one kind).
"""

from __future__ import annotations

import re

__all__ = ["id_key", "id_text"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def id_key(text: str) -> bytes:
    """The bytes stored for an id."""
    if len(text) == 36 and _UUID.match(text):
        return bytes.fromhex(text.replace("-", ""))
    encoded = text.encode()
    return encoded + b"\x00" if len(encoded) >= 16 else encoded


def id_text(key: bytes) -> str:
    """The id of stored bytes."""
    if len(key) == 16:
        h = key.hex()
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return (key[:-1] if len(key) > 16 else key).decode()
