"""How RatchetSaver stores channel values: a growing list as its new items, each value once per
thread, chains bounded by a whole copy, and nothing of a thread left after it is pruned or deleted."""

from __future__ import annotations

import dataclasses
import json
import zlib
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import ChannelVersions, Checkpoint, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ratchet.errors import CorruptRecord
from ratchet.integrations.langgraph import RatchetSaver
from ratchet.integrations.langgraph._packing import _DICTIONARY_1, unpack
from ratchet.records import LangGraphValue
from ratchet.store import StateStore

from ..helpers.raw_sql import run_sql

TABLES = ("langgraph_checkpoints", "langgraph_writes", "langgraph_values")


def message(step: int) -> dict[str, Any]:
    """A message of about 300 bytes."""
    return {"role": "assistant", "id": f"m{step}", "content": f"step {step}: " + "a new thought. " * 18}


def config_of(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def checkpoint_of(values: dict[str, Any], versions: dict[str, int]) -> Checkpoint:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values)
    checkpoint["channel_versions"] = dict(versions)
    return checkpoint


async def append_steps(
    saver: RatchetSaver, thread_id: str, steps: int, *, ns: str = ""
) -> list[RunnableConfig]:
    """Put `steps` checkpoints, each adding a message to "messages" and bumping "step"; their configs."""
    messages: list[dict[str, Any]] = []
    config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    configs = []
    system = {"role": "system", "content": "be brief"}
    for step in range(1, steps + 1):
        messages = [*messages, message(step)]  # a new list, as LangGraph's reducers make
        values = {"messages": messages, "step": step, "system": system}
        versions = {"messages": step, "step": step, "system": 1}
        new: ChannelVersions = {"messages": step, "step": step}
        if step == 1:
            new["system"] = 1
        config = await saver.aput(
            config, checkpoint_of(values, versions), {"source": "loop", "step": step}, new
        )
        configs.append(config)
    return configs


async def rows_of(store: StateStore, url: str, thread_id: str) -> dict[str, int]:
    """How many rows each of LangGraph's tables holds for the thread, read table by table; for
    ``langgraph_writes``, the tasks' writes on checkpoints, in their own rows or in the checkpoints'."""
    if url.startswith("memory://"):
        ops = store._ops  # type: ignore[attr-defined]
        return {
            "langgraph_checkpoints": len(ops.lg_checkpoints.get(thread_id, {})),
            "langgraph_writes": len(ops.lg_writes.get(thread_id, {})),
            "langgraph_values": len(ops.lg_values.get(thread_id, {})),
        }
    counts = {
        table: run_sql(url, f"SELECT count(*) FROM {table} WHERE thread_id = ?", thread_id)[0][0]
        for table in TABLES
    }
    query = "SELECT count(*) FROM langgraph_checkpoints WHERE thread_id = ? AND task_id IS NOT NULL"
    counts["langgraph_writes"] += run_sql(url, query, thread_id)[0][0]
    return counts


async def values_reached(store: StateStore, thread_id: str) -> set[str]:
    """The hashes of every value a checkpoint or pending write of the thread reaches, directly or
    through what it extends or takes its items from."""
    checkpoints = await store.list_langgraph_checkpoints(thread_id, None, limit=10_000)
    named = {digest for row in checkpoints for digest in row.value_hashes().values()}
    for ns in {row.ns for row in checkpoints}:
        ids = [row.checkpoint_id for row in checkpoints if row.ns == ns]
        writes = await store.list_langgraph_writes(thread_id, ns, ids)
        named |= {write.value_hash for write in writes if write.value_hash is not None}
    return {value.hash for value in await store.get_langgraph_values(thread_id, named)}


def links(chain: list[LangGraphValue]) -> list[LangGraphValue]:
    """The rows of a value's chain (the whole one and its extensions), without the lists of new items
    the extensions take from other rows."""
    listed = {value.items for value in chain}
    return [value for value in chain if value.hash not in listed]


async def test_a_growing_list_reads_back_exactly_at_every_checkpoint(store: StateStore) -> None:
    saver = RatchetSaver(store, max_chain=8)
    configs = await append_steps(saver, "t1", 60)

    latest = await saver.aget_tuple({"configurable": {"thread_id": "t1"}})
    assert latest is not None
    assert latest.checkpoint["channel_values"]["messages"] == [message(step) for step in range(1, 61)]
    assert latest.checkpoint["channel_values"]["step"] == 60
    history = [found async for found in saver.alist({"configurable": {"thread_id": "t1"}})]
    assert [found.config for found in history] == list(reversed(configs))
    for found in history:
        step = found.checkpoint["channel_values"]["step"]
        assert found.checkpoint["channel_values"]["messages"] == [message(n) for n in range(1, step + 1)]
        assert found.checkpoint["channel_values"]["system"] == {"role": "system", "content": "be brief"}

    # A saver that knows nothing of the thread (a new process) reads it back the same.
    fresh = RatchetSaver(store)
    again = await fresh.aget_tuple(configs[29])
    assert again is not None
    assert again.checkpoint["channel_values"]["messages"] == [message(n) for n in range(1, 31)]


async def test_a_growing_list_is_stored_as_its_new_items_with_whole_copies_that_bound_its_chains(
    store: StateStore,
) -> None:
    saver = RatchetSaver(store, max_chain=8)
    await append_steps(saver, "t1", 60)

    rows = await store.list_langgraph_checkpoints("t1", "", limit=100)
    chains: dict[int, int] = {}
    whole_at: set[int] = set()
    for row in rows:
        step = json.loads(row.metadata)["step"]
        chain = links(await store.get_langgraph_values("t1", [row.value_hashes()["messages"]]))
        assert sum(value.prev is None for value in chain) == 1  # one whole copy, then its extensions
        chains[step] = len(chain)
        if len(chain) == 1:
            whole_at.add(step)
    # Whole again once a chain is max(max_chain, the whole copy's items) long: after 8 rows from the
    # copy of 1 item, 9 rows from the copy of 9, 18 rows from the copy of 18.
    assert sorted(whole_at) == [1, 9, 18, 36]
    for step, length in chains.items():
        base = max(start for start in whole_at if start <= step)
        assert length == step - base + 1 <= max(8, base)

    every = await store.get_langgraph_values("t1", {row.value_hashes()["messages"] for row in rows})
    assert len(links(every)) == 60
    # Each message added is a value of its own (the list of new items, shared with the pending write
    # that would bring it), which its extension names.
    assert len(every) == 60 + 56
    added = {value.items for value in every}
    one = max(len(value.body) for value in every if value.hash in added)  # a message added
    stored = sum(len(value.body) for value in every)
    # Each version whole would be 60 * 61 / 2 = 1,830 messages; here 56 added one by one and whole
    # copies of 1 + 9 + 18 + 36 = 64, so about 120 (and whole copies stay under twice the last value).
    assert stored < 125 * one
    # The small channels that are not lists ("step", "system") are in each checkpoint's body: no row.
    assert all(set(row.value_hashes()) == {"messages"} for row in rows)


async def test_a_list_at_a_new_version_with_no_new_item_adds_no_row_and_later_ones_extend_it(
    store: StateStore, store_url: str
) -> None:
    # A chat's turns: each run's input adds no message but bumps the channel's version, then its node
    # appends one. Stored whole at each input, the history would cost N²/2 messages over N turns.
    saver = RatchetSaver(store)
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    messages: list[dict[str, Any]] = []
    version = 0
    for turn in range(1, 31):
        before = await rows_of(store, store_url, "t1")
        version += 1
        same = list(messages)  # the input's reducer makes a new, equal list
        config = await saver.aput(
            config, checkpoint_of({"messages": same}, {"messages": version}), {}, {"messages": version}
        )
        if turn > 1:
            assert (await rows_of(store, store_url, "t1"))["langgraph_values"] == before["langgraph_values"]
        version += 1
        messages = [*messages, message(turn)]
        config = await saver.aput(
            config, checkpoint_of({"messages": messages}, {"messages": version}), {}, {"messages": version}
        )

    rows = await store.list_langgraph_checkpoints("t1", "", limit=100)
    every = await store.get_langgraph_values("t1", {row.value_hashes()["messages"] for row in rows})
    assert len(every) < 2 * 30 + 5  # each message and its link once, not a whole history per turn
    fresh = RatchetSaver(store)
    for found in [found async for found in fresh.alist({"configurable": {"thread_id": "t1"}})]:
        versions = found.checkpoint["channel_versions"]["messages"]
        assert found.checkpoint["channel_values"]["messages"] == [
            message(n) for n in range(1, int(versions) // 2 + 1)
        ]


async def test_values_and_checkpoints_are_stored_compressed_when_that_is_shorter_and_read_back_exactly(
    store: StateStore,
) -> None:
    saver = RatchetSaver(store)
    document = {"content": "a report of the step, " * 40}
    tiny = {"n": 1}
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    checkpoint = checkpoint_of({"doc": document, "tiny": tiny}, {"doc": 1, "tiny": 1})
    config = await saver.aput(config, checkpoint, {"step": 1}, {"doc": 1, "tiny": 1})

    row = await store.get_langgraph_checkpoint("t1", "", checkpoint["id"])
    assert row is not None
    hashes = row.value_hashes()
    stored = {value.hash: value for value in await store.get_langgraph_values("t1", hashes.values())}
    serialized = saver.serde.dumps_typed(document)
    doc = stored[hashes["doc"]]
    assert doc.type == "z" and serialized[0] == "msgpack"  # raw deflate: the short tag of msgpack
    assert len(doc.body) < len(serialized[1]) / 4
    assert "tiny" not in hashes  # too small for a row: in the checkpoint's body
    body = saver.serde.loads_typed(unpack(row.type, row.body))
    assert body["channel_values"] == {"tiny": tiny}
    assert "id" not in body

    found = await RatchetSaver(store).aget_tuple(config)
    assert found is not None
    assert found.checkpoint == checkpoint


async def test_rows_stored_before_the_fifth_pass_under_zlib1_still_read(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store)
    document = {"content": "a report of the step, " * 40}
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    checkpoint = checkpoint_of({"doc": document}, {"doc": 1})
    config = await saver.aput(config, checkpoint, {"step": 1}, {"doc": 1})
    row = await store.get_langgraph_checkpoint("t1", "", checkpoint["id"])
    assert row is not None
    values = await store.get_langgraph_values("t1", row.value_hashes().values())
    assert {value.type for value in values} == {"z"} and row.type == "z"

    def zlib1(type_: str, body: bytes) -> tuple[str, bytes]:  # as the second to fourth passes stored it
        type_, body = unpack(type_, body)
        compressor = zlib.compressobj(6, zdict=_DICTIONARY_1)
        return "zlib1+" + type_, compressor.compress(body) + compressor.flush()

    if store_url.startswith("memory://"):
        ops = store._ops  # type: ignore[attr-defined]
        for value in values:
            type_, body = zlib1(value.type, value.body)
            ops.lg_values["t1"][value.hash] = dataclasses.replace(value, type=type_, body=body)
        [(key, stored)] = ops.lg_checkpoints["t1"].items()
        type_, body = zlib1(stored.type, stored.body)
        ops.lg_checkpoints["t1"][key] = dataclasses.replace(stored, type=type_, body=body)
    else:
        for value in values:
            statement = "UPDATE langgraph_values SET type = ?, body = ? WHERE hash = ?"
            run_sql(store_url, statement, *zlib1(value.type, value.body), value.hash)
        run_sql(store_url, "UPDATE langgraph_checkpoints SET type = ?, body = ?", *zlib1(row.type, row.body))

    found = await RatchetSaver(store).aget_tuple(config)
    assert found is not None
    assert found.checkpoint == checkpoint


@pytest.mark.parametrize(
    "ts",
    [
        "2026-11-29T22:03:33.178049+00:00",  # LangGraph's: stored as microseconds
        "2026-11-29T22:03:33+00:00",
        "2026-11-29T22:03:33.000000+00:00",  # not what isoformat gives back: kept as text
        "2026-11-29T23:03:33.178049+01:00",
        "2026-11-29T22:03:33.178049",
        "not a time",
    ],
)
async def test_a_checkpoint_s_ts_reads_back_as_the_same_text(store: StateStore, ts: str) -> None:
    saver = RatchetSaver(store)
    checkpoint = checkpoint_of({"doc": "d"}, {"doc": 1})
    checkpoint["ts"] = ts
    config = await saver.aput(config_of("t1"), checkpoint, {"step": 1}, {"doc": 1})
    row = await store.get_langgraph_checkpoint("t1", "", checkpoint["id"])
    assert row is not None
    stored = saver.serde.loads_typed(unpack(row.type, row.body))["ts"]
    assert isinstance(stored, int) == (ts == "2026-11-29T22:03:33.178049+00:00" or ts.endswith(":33+00:00"))

    found = await RatchetSaver(store).aget_tuple(config)
    assert found is not None
    assert found.checkpoint == checkpoint


async def test_a_small_value_is_kept_in_its_checkpoint_body_and_a_channel_moves_between_body_and_row(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store)
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    big = {"content": "a long report " * 40}
    # small, small, row, small, row, small, row (a bytearray would read back from the body as bytes)
    shapes: list[Any] = [3, None, big, "short", big, {"n": 2}, bytearray(b"ab")]
    configs = []
    for step, value in enumerate(shapes, start=1):
        checkpoint = checkpoint_of({"x": value, "count": step}, {"x": step, "count": step})
        config = await saver.aput(config, checkpoint, {"step": step}, {"x": step, "count": step})
        configs.append(config)

    assert (await rows_of(store, store_url, "t1"))[
        "langgraph_values"
    ] == 2  # the large value once, the bytearray
    fresh = RatchetSaver(store)  # another process: reads what the body and the rows hold
    for config, value in zip(configs, shapes, strict=True):
        found = await fresh.aget_tuple(config)
        assert found is not None
        assert found.checkpoint["channel_values"]["x"] == value
        assert type(found.checkpoint["channel_values"]["x"]) is type(value)
        row = await store.get_langgraph_checkpoint("t1", "", config["configurable"]["checkpoint_id"])
        assert row is not None
        assert set(row.value_hashes()) == ({"x"} if value is big or type(value) is bytearray else set())


async def test_identical_values_are_stored_once_per_thread(store: StateStore, store_url: str) -> None:
    saver = RatchetSaver(store)
    big = {"content": "the same large document " * 100}
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    for step in range(1, 6):  # a new version of the channel at each step, with the same value
        checkpoint = checkpoint_of({"doc": big}, {"doc": step})
        config = await saver.aput(config, checkpoint, {"step": step}, {"doc": step})

    assert (await rows_of(store, store_url, "t1"))["langgraph_values"] == 1


async def test_prune_keeps_the_latest_checkpoint_and_exactly_the_values_it_reaches(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store, max_chain=8)
    configs = await append_steps(saver, "t1", 30)
    await append_steps(saver, "t1", 5, ns="child:1")
    await saver.aput_writes(configs[-1], [("messages", [message(99)])], "task-1")
    await saver.aput_writes(configs[10], [("messages", [message(98)])], "task-2")
    await append_steps(saver, "other", 12)
    other_before = await rows_of(store, store_url, "other")

    await saver.aprune(["t1"], strategy="keep_latest")

    rows = await rows_of(store, store_url, "t1")
    assert rows["langgraph_checkpoints"] == 2  # one per namespace
    assert rows["langgraph_writes"] == 1  # the latest checkpoint's
    assert rows["langgraph_values"] == len(await values_reached(store, "t1"))
    # The root's latest "messages" is 13 links (a whole copy at 18, then 19..30) and the 12 messages
    # they add, the child's 5 links and 4 messages; "step" and "system" are in the checkpoints' bodies;
    # the kept write's message is one.
    assert rows["langgraph_values"] == (13 + 12) + (5 + 4) + 1
    latest = await saver.aget_tuple({"configurable": {"thread_id": "t1"}})
    assert latest is not None
    assert latest.checkpoint["channel_values"]["messages"] == [message(step) for step in range(1, 31)]
    assert latest.pending_writes == [("task-1", "messages", [message(99)])]
    assert await rows_of(store, store_url, "other") == other_before


async def test_delete_and_prune_to_nothing_leave_no_row_of_the_thread(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store, max_chain=8)
    for thread_id in ("deleted", "pruned", "kept"):
        configs = await append_steps(saver, thread_id, 20)
        await saver.aput_writes(configs[-1], [("messages", [message(99)])], "task-1")
    kept = await rows_of(store, store_url, "kept")

    await saver.adelete_thread("deleted")
    await saver.aprune(["pruned"], strategy="delete")

    nothing = dict.fromkeys(TABLES, 0)
    assert await rows_of(store, store_url, "deleted") == nothing
    assert await rows_of(store, store_url, "pruned") == nothing
    assert await rows_of(store, store_url, "kept") == kept


async def test_deleting_a_run_keeps_the_values_later_checkpoints_extend(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store, max_chain=100)
    config: RunnableConfig = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    messages: list[dict[str, Any]] = []
    for step in range(1, 11):
        messages = [*messages, message(step)]
        checkpoint = checkpoint_of({"messages": messages}, {"messages": step})
        run = "first" if step <= 5 else "second"
        config = await saver.aput(config, checkpoint, {"step": step, "run_id": run}, {"messages": step})

    await saver.adelete_for_runs(["first"])

    left = [found async for found in saver.alist({"configurable": {"thread_id": "t1"}})]
    assert [found.metadata["step"] for found in left] == [10, 9, 8, 7, 6]
    assert left[0].checkpoint["channel_values"]["messages"] == messages
    # Steps 1-5 are extended by 6-10: 10 links, and the 9 messages added after the first.
    assert (await rows_of(store, store_url, "t1"))["langgraph_values"] == 10 + 9


async def test_a_thread_deleted_by_another_saver_is_stored_whole_again(store: StateStore) -> None:
    writer, other = RatchetSaver(store), RatchetSaver(store)
    configs = await append_steps(writer, "t1", 3)
    await other.adelete_thread("t1")

    # The writer still takes step 3's list as stored: the store refuses the extension, the saver
    # stores the value whole instead.
    messages = [message(1), message(2), message(3), message(4)]
    checkpoint = checkpoint_of({"messages": messages}, {"messages": 4})
    config = await writer.aput(configs[-1], checkpoint, {"step": 4}, {"messages": 4})

    found = await other.aget_tuple(config)
    assert found is not None
    assert found.checkpoint["channel_values"]["messages"] == messages
    [row] = await store.list_langgraph_checkpoints("t1", "", limit=1)
    chain = await store.get_langgraph_values("t1", [row.value_hashes()["messages"]])
    assert [value.prev for value in chain] == [None]


async def test_the_same_list_at_a_new_version_after_the_thread_was_deleted_elsewhere_reads_back(
    store: StateStore,
) -> None:
    writer, other = RatchetSaver(store), RatchetSaver(store)
    configs = await append_steps(writer, "t1", 3)
    await other.adelete_thread("t1")

    # The writer still takes step 3's list as stored; the same list at a new version (a turn's input)
    # must not name a row that is gone.
    messages = [message(1), message(2), message(3)]
    checkpoint = checkpoint_of({"messages": messages}, {"messages": 4})
    config = await writer.aput(configs[-1], checkpoint, {"step": 4}, {"messages": 4})

    found = await other.aget_tuple(config)
    assert found is not None
    assert found.checkpoint["channel_values"]["messages"] == messages


async def test_a_saver_that_read_a_thread_extends_its_values(store: StateStore) -> None:
    await append_steps(RatchetSaver(store), "t1", 3)
    fresh = RatchetSaver(store)  # as after a restart
    latest = await fresh.aget_tuple({"configurable": {"thread_id": "t1"}})
    assert latest is not None

    messages = [*latest.checkpoint["channel_values"]["messages"], message(4)]
    checkpoint = checkpoint_of({"messages": messages}, {"messages": 4})
    await fresh.aput(latest.config, checkpoint, {"step": 4}, {"messages": 4})

    [row] = await store.list_langgraph_checkpoints("t1", "", limit=1)
    chain = links(await store.get_langgraph_values("t1", [row.value_hashes()["messages"]]))
    assert len(chain) == 4  # step 1 whole, then 2, 3 and 4 as their new items


async def test_a_chain_missing_a_link_is_unreadable_and_says_which(store: StateStore, store_url: str) -> None:
    saver = RatchetSaver(store)
    configs = await append_steps(saver, "t1", 5)
    [row] = await store.list_langgraph_checkpoints("t1", "", limit=1)
    chain = await store.get_langgraph_values("t1", [row.value_hashes()["messages"]])
    link = next(
        value.hash
        for value in chain
        if value.prev is not None and value.hash != row.value_hashes()["messages"]
    )
    if store_url.startswith("memory://"):
        del store._ops.lg_values["t1"][link]  # type: ignore[attr-defined]
    else:
        run_sql(store_url, "DELETE FROM langgraph_values WHERE thread_id = ? AND hash = ?", "t1", link)

    with pytest.raises(CorruptRecord) as unreadable:
        await RatchetSaver(store).aget_tuple(configs[-1])
    message = str(unreadable.value)
    assert "\n" not in message
    assert message.startswith(
        f"channel 'messages' of checkpoint {row.checkpoint_id} of thread 't1' is unreadable: "
    )
    assert "which is missing" in message and link in message


async def test_a_message_is_stored_once_for_its_pending_write_and_the_list_it_extends(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store)
    configs = await append_steps(saver, "t1", 3)
    before = (await rows_of(store, store_url, "t1"))["langgraph_values"]

    # As LangGraph does: the node's write (the messages it returns), then the next checkpoint.
    await saver.aput_writes(configs[-1], [("messages", [message(4)]), ("step", 4)], "task-4")
    messages = [message(step) for step in range(1, 5)]
    checkpoint = checkpoint_of({"messages": messages, "step": 4}, {"messages": 4, "step": 4, "system": 1})
    latest = await saver.aput(configs[-1], checkpoint, {"step": 4}, {"messages": 4, "step": 4})

    # The message once, in the row that extends the list with it (the write's value and the
    # checkpoint's); the new "step" is in the checkpoint's body.
    assert (await rows_of(store, store_url, "t1"))["langgraph_values"] == before + 1
    written = await saver.aget_tuple(configs[-1])
    assert written is not None
    assert written.pending_writes == [("task-4", "messages", [message(4)]), ("task-4", "step", 4)]
    found = await saver.aget_tuple(latest)
    assert found is not None
    assert found.checkpoint["channel_values"]["messages"] == messages
    named = await store.get_langgraph_checkpoint("t1", "", latest["configurable"]["checkpoint_id"])
    assert named is not None
    writes = await store.list_langgraph_writes("t1", "", [configs[-1]["configurable"]["checkpoint_id"]])
    assert [w.value_hash for w in writes if w.channel == "messages"] == [named.value_hashes()["messages"]]


async def test_a_step_s_metadata_task_path_and_writes_are_stored_deflated_and_read_back(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store)
    configs = await append_steps(saver, "t1", 2)
    path = "~__pregel_pull, agent"
    await saver.aput_writes(configs[-1], [("messages", [message(3)]), ("step", 3)], "task-3", path)
    await saver.aput_writes(configs[-1], [("__error__", "boom")], "task-3", path)  # merged, rewritten

    found = await saver.aget_tuple(configs[-1])
    assert found is not None
    assert found.metadata["step"] == 2
    assert found.pending_writes == [  # LangGraph's order: the special index (-1) first
        ("task-3", "__error__", "boom"),
        ("task-3", "messages", [message(3)]),
        ("task-3", "step", 3),
    ]
    writes = await store.list_langgraph_writes("t1", "", [configs[-1]["configurable"]["checkpoint_id"]])
    assert {write.task_path for write in writes} == {path}
    if store_url.startswith("memory://"):
        return
    [(metadata, task_path, blob)] = run_sql(
        store_url,
        "SELECT metadata, task_path, task_writes FROM langgraph_checkpoints WHERE task_id IS NOT NULL",
    )
    assert bytes(metadata)[:1] == bytes(blob)[:1] == b"\xff"  # langgraph_deflate's mark
    assert task_path == ""  # inside the deflated writes


async def test_a_message_a_saver_did_not_see_coming_is_still_stored_once(
    store: StateStore, store_url: str
) -> None:
    configs = await append_steps(RatchetSaver(store), "t1", 3)
    before = (await rows_of(store, store_url, "t1"))["langgraph_values"]

    # A saver that knows nothing of the thread (another process): the write's value is stored whole,
    # and the checkpoint's list names it as its new items.
    saver = RatchetSaver(store)
    await saver.aput_writes(configs[-1], [("messages", [message(4)]), ("step", 4)], "task-4")
    assert await saver.aget_tuple(configs[-1]) is not None  # now it knows the thread
    messages = [message(step) for step in range(1, 5)]
    checkpoint = checkpoint_of({"messages": messages, "step": 4}, {"messages": 4, "step": 4, "system": 1})
    latest = await saver.aput(configs[-1], checkpoint, {"step": 4}, {"messages": 4, "step": 4})

    # The message once and the link that extends the list with it (the new "step" is in the body).
    assert (await rows_of(store, store_url, "t1"))["langgraph_values"] == before + 2
    found = await RatchetSaver(store).aget_tuple(latest)
    assert found is not None
    assert found.checkpoint["channel_values"]["messages"] == messages
    assert found.pending_writes == []
    written = await RatchetSaver(store).aget_tuple(configs[-1])
    assert written is not None
    assert written.pending_writes == [("task-4", "messages", [message(4)]), ("task-4", "step", 4)]


async def test_a_task_writing_again_keeps_its_first_write_of_each_index_and_its_latest_special_one(
    store: StateStore, store_url: str
) -> None:
    saver = RatchetSaver(store)
    configs = await append_steps(saver, "t1", 2)
    large = "a large value. " * 40  # stored as a value of the thread, named by its hash
    await saver.aput_writes(configs[-1], [("a", 1), ("b", large), ("__error__", "first")], "task-1", "p")
    await saver.aput_writes(configs[-1], [("a", 2), ("c", 3), ("__error__", "second")], "task-1", "p")
    await saver.aput_writes(configs[-1], [("a", 4)], "task-2", "p")
    await saver.aput_writes(configs[-1], [("b", large)], "task-1", "p")  # the same again: no change

    found = await saver.aget_tuple(configs[-1])
    assert found is not None
    assert found.pending_writes is not None
    assert set(found.pending_writes) == {
        ("task-1", "a", 1),
        ("task-1", "b", large),
        ("task-1", "__error__", "second"),
        ("task-2", "a", 4),
    }
    if not store_url.startswith("memory://"):
        # task-1's writes in the checkpoint's row (it wrote there first), task-2's a row of their own
        assert (await rows_of(store, store_url, "t1"))["langgraph_writes"] == 2
        assert run_sql(store_url, "SELECT count(*) FROM langgraph_writes WHERE thread_id = ?", "t1") == [(1,)]
        query = "SELECT task_id FROM langgraph_checkpoints WHERE thread_id = ? AND task_id IS NOT NULL"
        assert [bytes(row[0]) for row in run_sql(store_url, query, "t1")] == [b"task-1"]


async def test_listing_pages_through_every_thread_newest_first(store: StateStore) -> None:
    saver = RatchetSaver(store)
    first = await append_steps(saver, "t1", 70)
    second = await append_steps(saver, "t2", 70)  # more than a page (100) in all
    everything = [found.config async for found in saver.alist(None)]
    assert everything == list(reversed(first + second))

    ids = [found.config["configurable"]["checkpoint_id"] async for found in saver.alist(None, limit=150)]
    assert len(ids) == 140
    assert ids == sorted(ids, reverse=True)
    newest = [found.metadata["step"] async for found in saver.alist(None, filter={"step": 5}, limit=3)]
    assert newest == [5, 5]  # one of each thread
    before = [
        found.config async for found in saver.alist({"configurable": {"thread_id": "t1"}}, before=first[2])
    ]
    assert before == [first[1], first[0]]


@dataclasses.dataclass
class Note:
    text: str


async def test_a_saver_with_an_allowlist_reads_its_values_with_it(store: StateStore) -> None:
    # A strict serializer returns a type it does not allow as a dict; StateGraph.compile allows the
    # state's types with `with_allowlist`, and the values must be read with that serializer too.
    saver = RatchetSaver(store, serde=JsonPlusSerializer(allowed_msgpack_modules=None))
    allowing = saver.with_allowlist({(Note.__module__, "Note")})
    assert allowing is not saver

    notes = [Note("first " * 50), Note("second " * 50)]
    checkpoint = checkpoint_of({"notes": notes}, {"notes": 1})
    stored = await allowing.aput(config_of("t1"), checkpoint, {"step": 1}, {"notes": 1})
    await allowing.aput_writes(stored, [("notes", [Note("third " * 50)])], "task-1")

    found = await allowing.aget_tuple(stored)
    assert found is not None
    assert found.checkpoint["channel_values"]["notes"] == notes
    assert found.pending_writes == [("task-1", "notes", [Note("third " * 50)])]
