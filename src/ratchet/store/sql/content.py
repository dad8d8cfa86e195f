"""Content addressing: the large values an operation's input repeats, stored once per task.

An agent's model calls each journal the whole request: the system prompt, the
tool schemas and the message history, which grows by a turn's messages per
call. Stored as they are, N turns cost O(N²) bytes. Here, before an
operation's input is written, its large parts go to the task's ``contents``
table, each under the hash of its JSON, and the input keeps only the hashes:

- a string of ``THRESHOLD`` bytes or more is one row (a *blob*), and so is
  a dict of that size none of whose parts is stored apart;
- a list of that size is a *list node*: its items, each item of that size as
  a blob hash and the others as they are. A list that extends a list stored
  before (the history of the previous call plus this turn's messages) is
  stored as that list's hash (``prev``) and the items it adds, so each call
  costs its new content and a few hashes, not the history again;
- a large dict with large parts stays a dict, whose large parts are hashes.

The stored input is then ``{"$content": 1, "value": ..., "b": [...], "l":
[...]}``: ``b`` and ``l`` list the paths (keys and indices from the top)
where ``value`` holds a blob's or a list's hash; nothing in the user's data is
ever read as a reference. An input that is a dict with a ``"$content"`` key of
its own is always wrapped, so it is never taken for a wrapper. A list's hash
is that of its items in order (a chained hash), so a list is found again
whatever way it was stored.

Every reference is checked inside the transaction that writes it: a list is
stored after ``prev`` only if ``prev`` is stored (one conditional insert), and
the hashes this process remembers per task (which lists it wrote, to find the
previous one) are only a guess, so a rolled-back transaction never leaves a
reference to a row that is not there. A read fetches what its operations need
in two queries at most (the lists with every list they extend, by a recursive
query, then the blobs their items name) and gives back the input unchanged.

Rows are per task (``(task_id, hash)``): deleting a task deletes its contents,
and two tasks never share a row, so there is nothing to count or collect.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import CorruptRecord
from ...records import Operation
from .driver import Driver

__all__ = ["MARK", "THRESHOLD", "loaded", "may_apply", "stored"]

THRESHOLD = 256
"""A value whose JSON is this long (or about: measured without encoding it) is stored once, by hash."""

MARK = "$content"
_VERSION = 1
_WRAPPER_KEYS = frozenset({MARK, "value", "b", "l"})
_HASH_BYTES = 16  # 128 bits of SHA-256 (22 characters): one task's values never meet by chance
_RECENT_TASKS = 4096
_RECENT_LISTS = 8

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode

Path = list[str | int]

# The lists this process stored lately, per task (hash -> length): where to look for the list a
# new one extends. Only a guess: every use is checked against the database.
_recent: OrderedDict[str, dict[str, int]] = OrderedDict()


def _size(value: Any, limit: float) -> int:
    """About the length of `value` as JSON, counted until it reaches `limit`."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 1 + len(item)
            for key, inner in item.items():
                total += len(key) + 3
                stack.append(inner)
        elif isinstance(item, list):
            total += 1 + len(item)
            stack.extend(item)
        else:
            total += 5
        if total >= limit:
            break
    return total


def _short(hasher: Any) -> str:
    return base64.urlsafe_b64encode(hasher.digest()[:_HASH_BYTES]).decode().rstrip("=")


def _blob_hash(text: str) -> str:
    return _short(hashlib.sha256(b"b" + text.encode()))


def _list_hasher() -> Any:
    return hashlib.sha256(b"l")


def _chunk(text: str) -> bytes:
    return b"%d:%s" % (len(text), text.encode())


@dataclass
class _ListNode:
    """One list of an input: its items, and each item's JSON."""

    hash: str
    items: list[Any]
    texts: list[str]

    def stored_whole(self) -> tuple[str, dict[str, str]]:
        """The row of the list stored whole (each large item by its hash), and the rows of those items."""
        items = list(self.items)
        blobs: list[int] = []
        rows: dict[str, str] = {}
        for index, text in enumerate(self.texts):
            if len(text) >= THRESHOLD:
                items[index] = digest = _blob_hash(text)
                rows[digest] = text
                blobs.append(index)
        return _encode({"n": len(items), "i": items, "b": blobs}), rows


@dataclass
class _Encoding:
    """An input taken apart: the blobs and lists to store, and the paths where the value names them."""

    blobs: dict[str, str] = field(default_factory=dict)
    lists: dict[str, _ListNode] = field(default_factory=dict)
    blob_paths: list[Path] = field(default_factory=list)
    list_paths: list[Path] = field(default_factory=list)

    def value(self, value: Any, path: Path) -> Any:
        if isinstance(value, str):
            return self._blob(value, path) if len(value) >= THRESHOLD else value
        if isinstance(value, list):
            return self._list(value, path) if _size(value, THRESHOLD) >= THRESHOLD else value
        if isinstance(value, dict) and _size(value, THRESHOLD) >= THRESHOLD:
            before = len(self.blob_paths) + len(self.list_paths)
            parts = {key: self.value(inner, [*path, key]) for key, inner in value.items()}
            if len(self.blob_paths) + len(self.list_paths) == before:
                return self._blob(value, path)  # large, but of small parts: one row
            return parts
        return value

    def _blob(self, value: Any, path: Path) -> str:
        text = _encode(value)
        digest = _blob_hash(text)
        self.blobs[digest] = text
        self.blob_paths.append(path)
        return digest

    def _list(self, value: list[Any], path: Path) -> str:
        hasher = _list_hasher()
        texts = [_encode(item) for item in value]
        for text in texts:
            hasher.update(_chunk(text))
        digest = _short(hasher)
        self.lists[digest] = _ListNode(digest, value, texts)
        self.list_paths.append(path)
        return digest


# --------------------------------------------------------------------------- writing


def may_apply(value: Any) -> bool:
    """Whether an input may have parts to store by content (`stored` decides which).

    It may when it is about `THRESHOLD` long as JSON, or must be wrapped; most
    tool calls' arguments are not, and their writes skip `stored`.
    """
    if value is None or isinstance(value, bool | int | float):
        return False
    if type(value) is dict:  # a tool's arguments, most often flat: `_size`'s sum without its stack
        if MARK in value:
            return True
        total = 1 + len(value)
        for key, inner in value.items():
            kind = type(inner)
            if kind is str:
                total += len(key) + 5 + len(inner)
            elif inner is None or kind is int or kind is float or kind is bool:
                total += len(key) + 8
            else:
                return _size(value, THRESHOLD) >= THRESHOLD
        return total >= THRESHOLD
    return (isinstance(value, dict) and MARK in value) or _size(value, THRESHOLD) >= THRESHOLD


async def stored(driver: Driver, op: Operation) -> Operation:
    """`op` as its row holds it: its input's large parts stored in the task's contents, by hash.

    Writes the content rows on `driver`, in the caller's transaction; an input
    with nothing large comes back as it is (the same object).
    """
    value = op.input
    if not may_apply(value):
        return op
    must_wrap = isinstance(value, dict) and MARK in value
    encoding = _Encoding()
    tree = encoding.value(value, [])
    if not (must_wrap or encoding.blob_paths or encoding.list_paths):
        return op
    await _write(driver, op.task_id, encoding)
    wrapped = {MARK: _VERSION, "value": tree, "b": encoding.blob_paths, "l": encoding.list_paths}
    return op.model_copy(update={"input": wrapped})


def _blob_params(task_id: str, rows: dict[str, str]) -> list[dict[str, Any]]:
    return [{"task_id": task_id, "hash": digest, "body": body} for digest, body in rows.items()]


async def _write(driver: Driver, task_id: str, encoding: _Encoding) -> None:
    if encoding.blobs:
        await driver.execute_many("put_content", _blob_params(task_id, encoding.blobs))
    for node in encoding.lists.values():
        await _write_list(driver, task_id, node)
        _remember(task_id, node.hash, len(node.items))


def _extended(task_id: str, node: _ListNode) -> tuple[str, int] | None:
    """The longest list this process stored lately for the task that `node` starts with."""
    recent = _recent.get(task_id)
    if not recent:
        return None
    length = len(node.items)
    wanted = {size for size in recent.values() if size <= length}
    prefixes: dict[int, str] = {}
    hasher = _list_hasher()
    for index, text in enumerate(node.texts, start=1):
        hasher.update(_chunk(text))
        if index in wanted:
            prefixes[index] = _short(hasher)
    found = [(size, digest) for digest, size in recent.items() if prefixes.get(size) == digest]
    if not found:
        return None
    size, digest = max(found)
    return digest, size


def _tail_body(node: _ListNode, start: int) -> str:
    # The items a list adds to the one it extends are new: kept in its row, not as blobs of their own.
    return f'{{"n":{len(node.items)},"i":[{",".join(node.texts[start:])}],"b":[]}}'


async def _write_list(driver: Driver, task_id: str, node: _ListNode) -> None:
    before = _extended(task_id, node)
    if before is not None:
        prev, size = before
        if size == len(node.items):
            if await driver.one("has_content", {"task_id": task_id, "hash": node.hash}) is not None:
                return
        else:
            params = {"task_id": task_id, "hash": node.hash, "prev": prev, "body": _tail_body(node, size)}
            if await driver.execute("put_content_after", params):
                return
    # Stored whole: no earlier list to extend, or it is not stored (its transaction rolled back).
    body, rows = node.stored_whole()
    if rows:
        await driver.execute_many("put_content", _blob_params(task_id, rows))
    await driver.execute("put_content", {"task_id": task_id, "hash": node.hash, "body": body})


def _remember(task_id: str, digest: str, length: int) -> None:
    recent = _recent.get(task_id)
    if recent is None:
        recent = _recent[task_id] = {}
        if len(_recent) > _RECENT_TASKS:
            _recent.popitem(last=False)
    else:
        _recent.move_to_end(task_id)
    recent.pop(digest, None)
    recent[digest] = length
    if len(recent) > _RECENT_LISTS:
        del recent[next(iter(recent))]


# --------------------------------------------------------------------------- reading


def _is_wrapped(value: Any) -> bool:
    return isinstance(value, dict) and value.get(MARK) == _VERSION and value.keys() == _WRAPPER_KEYS


async def loaded(driver: Driver, task_id: str, ops: Sequence[Operation]) -> list[Operation]:
    """`ops` of task `task_id` as they were recorded: every stored input put back together.

    Raises:
        CorruptRecord: an input names content the task's contents do not hold.
    """
    wrapped = [op for op in ops if _is_wrapped(op.input)]
    if not wrapped:
        return list(ops)
    reader = _Reader(driver, task_id)
    for op in wrapped:
        reader.want(op.input)
    await reader.fetch()
    inputs: dict[int, Any] = {}
    broken: dict[int, Exception] = {}
    for op in wrapped:
        try:
            inputs[op.seq] = reader.value(op.input)
        except _UNREADABLE as exc:
            broken[op.seq] = exc
    if broken:
        seqs = ", ".join(str(seq) for seq in broken)
        first = next(iter(broken.values()))
        raise CorruptRecord(
            f"the stored content of operation(s) {seqs} of task {task_id}",
            "contents",
            (task_id,),
            _problem(first),
        ) from first
    return [op.model_copy(update={"input": inputs[op.seq]}) if op.seq in inputs else op for op in ops]


_UNREADABLE = (KeyError, ValueError, TypeError, IndexError)


def _problem(exc: Exception) -> str:
    if isinstance(exc, KeyError):
        return f"content {exc.args[0]} is missing"
    return f"{type(exc).__name__}: {exc}"


class _Reader:
    """The content rows some stored inputs name, fetched in two queries at most, and those inputs rebuilt."""

    def __init__(self, driver: Driver, task_id: str) -> None:
        self._driver = driver
        self._task_id = task_id
        self._blobs: set[str] = set()
        self._lists: set[str] = set()
        self._rows: dict[str, tuple[str | None, str]] = {}
        self._nodes: dict[str, dict[str, Any]] = {}

    def want(self, wrapper: dict[str, Any]) -> None:
        for path in wrapper["b"]:
            self._blobs.add(_at(wrapper["value"], path))
        for path in wrapper["l"]:
            self._lists.add(_at(wrapper["value"], path))

    async def _get(self, hashes: set[str]) -> None:
        params = {"task_id": self._task_id, "hashes": _encode(sorted(hashes))}
        for digest, prev, body in await self._driver.all("get_contents", params):
            self._rows[digest] = (prev, body)

    async def fetch(self) -> None:
        await self._get(self._blobs | self._lists)
        items: set[str] = set()
        for digest in self._lists:
            try:
                chain = self._chain(digest)
            except _UNREADABLE:
                continue  # said when the input that names it is rebuilt
            for node in chain:
                items.update(node["i"][index] for index in node["b"])
        missing = items - self._rows.keys()
        if missing:
            await self._get(missing)

    def _node(self, digest: str) -> dict[str, Any]:
        node = self._nodes.get(digest)
        if node is None:
            prev, body = self._rows[digest]
            node = self._nodes[digest] = {**json.loads(body), "prev": prev}
        return node

    def _chain(self, digest: str) -> list[dict[str, Any]]:
        """The nodes of a list, from the one stored whole to `digest`'s."""
        chain = []
        current: str | None = digest
        while current is not None:
            node = self._node(current)
            chain.append(node)
            current = node["prev"]
        chain.reverse()
        return chain

    def _list(self, digest: str) -> list[Any]:
        chain = self._chain(digest)
        items: list[Any] = []
        for node in chain:
            part = list(node["i"])
            for index in node["b"]:
                part[index] = json.loads(self._rows[part[index]][1])
            items.extend(part)
        if len(items) != chain[-1]["n"]:
            raise ValueError(f"list {digest} has {len(items)} items, not {chain[-1]['n']}")
        return items

    def value(self, wrapper: dict[str, Any]) -> Any:
        value = wrapper["value"]
        for paths, rebuild in ((wrapper["b"], self._blob), (wrapper["l"], self._list)):
            for path in paths:
                part = rebuild(_at(value, path))
                if not path:
                    value = part
                else:
                    _at(value, path[:-1])[path[-1]] = part
        return value

    def _blob(self, digest: str) -> Any:
        return json.loads(self._rows[digest][1])


def _at(value: Any, path: Path) -> Any:
    for step in path:
        value = value[step]
    return value
