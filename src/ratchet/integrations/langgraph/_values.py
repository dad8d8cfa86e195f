"""Channel values as RatchetSaver stores them: each once per thread, a list that grows as its new items.

LangGraph's savers store a channel's whole value at each of its versions, so
a history that gains a message per step costs O(N²) bytes over N steps. Here
each value is a row of the thread's values, under a hash of what the row
holds (identical rows are one row):

- a value stored *whole*: the serializer's bytes of the value (zlib-compressed
  when shorter: `_packing`; its hash is of the serializer's bytes);
- a list that extends the previous value of its channel (the same items,
  then more: the append-a-message pattern) is stored as that value's hash
  (``prev``) and the serializer's bytes of the items it adds. The items are
  compared as values, after the previous value was copied (a list changed
  in place is seen); an item object changed in place is not (LangGraph's
  reducers make new items).

A pending write's value of ``SHARED`` bytes or more is a row too
(`ChannelValues.write_row`): a list written to a channel whose list this
saver knows is stored as that list extended by it, which is the row the
next checkpoint names when its reducer appended the items unchanged (a
node's returned messages: stored once, no other row). New items of
``SHARED`` bytes or more that no write stored so are a value of their own,
named by the extension's ``items``: the same bytes as a write's value
stored whole, stored once for both.

A value is stored whole again when its chain of extensions reaches
``max(max_chain, n)`` rows, n the number of items of the whole copy the chain
starts from. So a read is one query of at most that many rows (for a list of
at least that many items: deserializing the items costs more than fetching
the rows), and whole copies grow geometrically: however long the history,
they add up to less than twice the latest value, not a copy every K versions
(which is quadratic again, with a smaller constant).

The previous value of each channel is known from this saver's last put or
read of the thread (`Known`), at most ``_THREADS`` threads: after a restart, a
thread's first put stores its values whole. That knowledge is only a guess:
the store writes an extension only if the value it extends is still stored
(a thread pruned by another process), else refuses the whole put, and the
saver puts it again with every value whole.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.checkpoint.base import ChannelVersions
from langgraph.checkpoint.serde.base import SerializerProtocol

from ...errors import CorruptRecord
from ...records import LangGraphValue
from ._packing import pack, unpack

__all__ = ["SHARED", "ChannelValues", "Encoded", "whole_value"]

_HASH_BYTES = 12  # 96 bits of SHA-256 (16 characters): a thread of 10⁹ values meets by chance once in 10¹¹
_THREADS = 1024
_WRITTEN = 4096  # the rows of pending writes remembered, for the checkpoints that follow them

SHARED = 256
"""A list of new items (or a pending write's value) of this many bytes is a value of its own, stored once."""

INLINE = 64
"""A value that is not a list and serializes to fewer bytes than this is kept in its checkpoint's body
(when its type tag is one of `_NESTS`)."""

# The serializer's type tags of values that read back the same from inside the checkpoint's body as
# alone (JsonPlusSerializer's; a bytearray alone is tagged "bytearray", and nested reads back as bytes).
_NESTS = frozenset({"msgpack", "null", "bytes"})


@dataclass(frozen=True, slots=True)
class Known:
    """What a channel's value at a version is stored as."""

    version: str | int | float
    hash: str
    value: Any  # the value, when not a list
    items: list[Any] | None  # a copy of the list, to compare the next version with
    chain: int  # rows from the value stored whole to this one
    base_items: int  # the number of items of that whole value
    row: LangGraphValue | None = None  # the row `hash` names, to write again for the same list


@dataclass(frozen=True, slots=True)
class Encoded:
    """A checkpoint's values: the hash of each channel's, the rows to store, and what to remember;
    `inline` the small values kept in the checkpoint's body instead (`INLINE`)."""

    hashes: dict[str, str]
    rows: list[LangGraphValue]
    known: dict[str, Known]
    inline: dict[str, Any] = field(default_factory=dict)


def whole_value(thread_id: str, dumped: tuple[str, bytes]) -> LangGraphValue:
    """The row of a value stored whole, from the serializer's type tag and bytes."""
    type_, body = dumped
    digest = _digest(b"w", type_.encode(), body)  # of the serializer's bytes, however they are stored
    return LangGraphValue(thread_id, digest, None, *pack(dumped))


def _extension(thread_id: str, prev: str, dumped: tuple[str, bytes]) -> LangGraphValue:
    """The row of a list that extends the value `prev` names with the items the serializer wrote."""
    type_, body = dumped
    digest = _digest(b"x", prev.encode(), type_.encode(), body)
    return LangGraphValue(thread_id, digest, prev, *pack(dumped))


def _digest(*parts: bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(b"%d:" % len(part))
        hasher.update(part)
    return base64.urlsafe_b64encode(hasher.digest()[:_HASH_BYTES]).decode().rstrip("=")


def _nests(dumped: tuple[str, bytes]) -> bool:
    """Whether a value the serializer wrote so is kept in its checkpoint's body."""
    return len(dumped[1]) < INLINE and dumped[0] in _NESTS


def _unchanged(previous: Known, version: str | int | float, value: Any) -> bool:
    """Whether `value` at `version` is the one `previous` knows (a version alone is not proof: two
    branches of a thread may each make version N of a channel)."""
    if previous.version != version:
        return False
    if previous.items is not None:
        return type(value) is list and previous.items == value
    try:
        return previous.value is value or bool(previous.value == value)
    except Exception:  # a value whose == is not a truth (an array): not known to be the same
        return False


class ChannelValues:
    """Encodes a checkpoint's channel values into rows, and rebuilds them from rows."""

    def __init__(self, serde: SerializerProtocol, *, max_chain: int) -> None:
        if max_chain < 1:
            raise ValueError(f"max_chain must be 1 or more, not {max_chain}")
        self.serde = serde
        self.max_chain = max_chain
        self._known: OrderedDict[tuple[str, str], dict[str, Known]] = OrderedDict()
        self._written: OrderedDict[str, None] = OrderedDict()  # rows of pending writes, newest last

    def using(self, serde: SerializerProtocol) -> ChannelValues:
        """The same, with another serializer, sharing what it knows of the threads."""
        clone = ChannelValues(serde, max_chain=self.max_chain)
        clone._known = self._known
        clone._written = self._written
        return clone

    def write_row(
        self, thread_id: str, ns: str, channel: str, value: Any, dumped: tuple[str, bytes]
    ) -> LangGraphValue:
        """The row of a large pending write's value (`SHARED` bytes or more).

        A list written to a channel whose value is a known list is stored as
        that list extended by it: a node's returned messages, which the next
        checkpoint's value is (its reducer appends them), so that checkpoint
        names this row and adds none. Any other value is stored whole. A
        write reads the row's items alone, whatever it extends.
        """
        previous = self._known.get((thread_id, ns), {}).get(channel)
        if type(value) is not list or previous is None or previous.items is None:
            return whole_value(thread_id, dumped)
        row = _extension(thread_id, previous.hash, dumped)
        self._written[row.hash] = None
        if len(self._written) > _WRITTEN:
            self._written.popitem(last=False)
        return row

    # ------------------------------------------------------------------ what this saver knows

    def remember(self, thread_id: str, ns: str, known: Mapping[str, Known]) -> None:
        """Note what the channels' values are stored as, after the store committed them."""
        key = (thread_id, ns)
        channels = self._known.get(key)
        if channels is None:
            channels = self._known[key] = {}
            if len(self._known) > _THREADS:
                self._known.popitem(last=False)
        else:
            self._known.move_to_end(key)
        channels.update(known)

    def forget(self, thread_id: str | None = None) -> None:
        """Forget a thread's values (every thread's with None): they may be gone from the store."""
        if thread_id is None:
            self._known.clear()
            return
        for key in [key for key in self._known if key[0] == thread_id]:
            del self._known[key]

    # ------------------------------------------------------------------ writing

    def encode(
        self,
        thread_id: str,
        ns: str,
        values: Mapping[str, Any],
        versions: ChannelVersions,
        new_versions: ChannelVersions,
    ) -> Encoded:
        """The rows of a checkpoint's channel values (those of the channels it has a version of)."""
        before = self._known.get((thread_id, ns), {})
        hashes: dict[str, str] = {}
        rows: list[LangGraphValue] = []
        known: dict[str, Known] = {}
        inline: dict[str, Any] = {}
        for channel, version in versions.items():
            if channel not in values:
                continue  # an empty channel: nothing to store
            value = values[channel]
            if type(value) is not list and _nests(self.serde.dumps_typed(value)):
                inline[channel] = value  # a counter, a flag, a branch's None: in the body, no row to name
                continue
            previous = before.get(channel)
            if channel not in new_versions and previous is not None and _unchanged(previous, version, value):
                hashes[channel] = previous.hash
                continue
            written, now = self._rows(thread_id, value, version, previous)
            rows += written
            hashes[channel] = now.hash
            known[channel] = now
        return Encoded(hashes, rows, known, inline)

    def _rows(
        self, thread_id: str, value: Any, version: str | int | float, previous: Known | None
    ) -> tuple[list[LangGraphValue], Known]:
        is_list = type(value) is list
        items = list(value) if is_list else None
        if (
            is_list
            and previous is not None
            and previous.row is not None
            and previous.items is not None
            and previous.items == value
        ):
            # The same list at a new version (a turn's input of no new messages): the same row, written
            # again (a no-op) so that the store refuses the put if what it extends is gone, as for any
            # extension, and a whole row deleted meanwhile is stored again.
            return [previous.row], replace(previous, version=version, items=items)
        if (
            is_list
            and previous is not None
            and previous.items is not None
            and previous.chain + 1 < max(self.max_chain, previous.base_items)
            and len(value) > len(previous.items)
            and value[: len(previous.items)] == previous.items
        ):
            known = Known(version, "", None, items, previous.chain + 1, previous.base_items)
            added = self.serde.dumps_typed(value[len(previous.items) :])
            row = _extension(thread_id, previous.hash, added)
            if len(added[1]) < SHARED or row.hash in self._written:
                # Small new items in the row; or the row a pending write stored its value as (`write_row`):
                # the message is stored once, in the row the checkpoint names.
                return [row], replace(known, hash=row.hash, row=row)
            # The new items as a value of their own: the same bytes as the pending write that
            # brought them (a node's returned messages), which is then stored once for both.
            new = whole_value(thread_id, added)
            digest = _digest(b"i", previous.hash.encode(), new.hash.encode())
            row = LangGraphValue(thread_id, digest, previous.hash, "", b"", new.hash)
            return [new, row], replace(known, hash=digest, row=row)
        row = whole_value(thread_id, self.serde.dumps_typed(value))
        kept = None if is_list else value
        return [row], Known(version, row.hash, kept, items, 0, len(value) if is_list else 0, row)

    # ------------------------------------------------------------------ reading

    def decode(
        self,
        hashes: Mapping[str, str],
        versions: ChannelVersions,
        rows: Mapping[str, LangGraphValue],
        *,
        where: str,
    ) -> tuple[dict[str, Any], dict[str, Known]]:
        """The channel values the hashes name, rebuilt from `rows` (by hash), and what they are stored as.

        `where` names the checkpoint, for errors ("checkpoint C of thread 't1'").

        Raises:
            CorruptRecord: a value, or one it extends, is missing or does not extend a list.
        """
        values: dict[str, Any] = {}
        known: dict[str, Known] = {}
        for channel, digest in hashes.items():
            value, chain, base_items = self._value(digest, rows, f"channel {channel!r} of {where}")
            values[channel] = value
            version = versions.get(channel)
            if version is not None:
                is_list = type(value) is list
                kept = None if is_list else value
                copy = list(value) if is_list else None
                known[channel] = Known(version, digest, kept, copy, chain, base_items, rows.get(digest))
        return values, known

    def _value(self, digest: str, rows: Mapping[str, LangGraphValue], what: str) -> tuple[Any, int, int]:
        """The value, the rows of its chain after the whole one, and the whole one's items."""
        chain: list[LangGraphValue] = []
        current: str | None = digest
        while current is not None:
            row = rows.get(current)
            if row is None:
                problem = f"its value {digest} extends value {current}, which is missing"
                if current == digest:
                    problem = f"its value {digest} is missing"
                raise CorruptRecord(what, "langgraph_values", (current,), problem)
            chain.append(row)
            current = row.prev
        base = chain.pop()
        value = self.serde.loads_typed(unpack(base.type, base.body))
        base_items = len(value) if type(value) is list else 0
        if not chain:
            return value, 0, base_items
        if type(value) is not list:
            problem = "a list extends a value that is not a list"
            raise CorruptRecord(what, "langgraph_values", (base.hash,), problem)
        value = list(value)
        for row in reversed(chain):
            if row.items is None:
                value.extend(self.serde.loads_typed(unpack(row.type, row.body)))
                continue
            listed = rows.get(row.items)
            if listed is None:
                problem = f"its value {digest} takes items from value {row.items}, which is missing"
                raise CorruptRecord(what, "langgraph_values", (row.items,), problem)
            value.extend(self.serde.loads_typed(unpack(listed.type, listed.body)))
        return value, len(chain), base_items
