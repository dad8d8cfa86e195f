"""A store in trouble: a full disk, a read-only database, a server that went away.

Each driver translates its library's errors at one place into `StoreError`s
that say what a person can do: `StoreFull` (free space), `StoreReadOnly`
(make it writable), `StoreUnavailable` (the rest of what passes once the
store is fixed). A write that meets one leaves nothing behind, and the store
works again once the trouble is gone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import psycopg
import pytest

from ratchet.errors import (
    StoreError,
    StoreFull,
    StoreReadOnly,
    StoreUnavailable,
)
from ratchet.store import StateStore, open_store
from ratchet.store.sql.postgresql.schema import Target, server_error

from ..helpers.builders import make_event, make_task
from ..helpers.disk import SmallDisk

BIG = "x" * 400_000  # more than the room a full disk leaves


@pytest.fixture
async def on_small_disk(small_disk: SmallDisk) -> AsyncIterator[StateStore]:
    """A SQLite store on the small disk, holding task t1."""
    store = await open_store(f"sqlite:///{small_disk.directory / 'r.db'}")
    try:
        await store.create_task(make_task("t1"))
        yield store
    finally:
        await store.close()


# ------------------------------------------------------------------ a full disk (SQLite)


async def test_a_write_to_a_full_disk_is_store_full_and_leaves_nothing(
    small_disk: SmallDisk, on_small_disk: StateStore
) -> None:
    store = on_small_disk
    small_disk.fill(leave=16_384)
    try:
        with pytest.raises(StoreFull) as caught:
            async with store.transaction() as tx:
                await tx.append_event(make_event("t1", "small"))
                await tx.append_event(make_event("t1", BIG))
        assert str(small_disk.directory / "r.db") in caught.value.message
        assert "free space" in caught.value.message
        assert caught.value.__cause__ is not None  # SQLite's own error, kept as the cause
        assert await store.list_events("t1") == []  # reading a full disk works; nothing was kept
    finally:
        small_disk.free()
    await store.append_event(make_event("t1", BIG))  # the connection is fine: no transaction left open
    assert [e.message for e in await store.list_events("t1")] == [BIG]


async def test_a_full_disk_with_no_room_at_all_fails_each_write_the_same_way(
    small_disk: SmallDisk, on_small_disk: StateStore
) -> None:
    store = on_small_disk
    small_disk.fill()
    try:
        for _ in range(3):  # SQLite rolled back itself, or left the transaction for us: either way
            with pytest.raises(StoreFull):
                await store.append_event(make_event("t1", BIG))
    finally:
        small_disk.free()
    await store.append_event(make_event("t1", "after"))
    assert [e.message for e in await store.list_events("t1")] == ["after"]


# ------------------------------------------------------------------ a read-only database (SQLite)


async def test_a_database_that_cannot_be_written_opens_for_reading(
    small_disk: SmallDisk, on_small_disk: StateStore
) -> None:
    await on_small_disk.close()
    path = small_disk.directory / "r.db"
    small_disk.make_read_only()
    try:
        store = await open_store(f"sqlite:///{path}", create=False)
        try:
            assert (await store.get_task("t1")).id == "t1"
            with pytest.raises(StoreReadOnly) as caught:
                await store.append_event(make_event("t1", "refused"))
        finally:
            await store.close()
    finally:
        small_disk.make_writable()
    assert caught.value.message.startswith(f"the database at {path} is read-only (")
    assert "not a Ratchet database" not in caught.value.message


async def test_no_database_can_be_created_where_nothing_can_be_written(small_disk: SmallDisk) -> None:
    small_disk.make_read_only()
    try:
        with pytest.raises(StoreReadOnly, match="cannot create the database at"):
            await open_store(f"sqlite:///{small_disk.directory / 'new.db'}")
    finally:
        small_disk.make_writable()


# ------------------------------------------------------------------ a read-only database (PostgreSQL)


def _read_only(url: str) -> str:
    """The URL of the same database, every transaction of its sessions read-only (as on a standby)."""
    return f"{url}?options=-c%20default_transaction_read_only%3Don"


async def test_a_read_only_postgresql_database_reads_and_refuses_writes(postgres_url: str) -> None:
    async with await open_store(postgres_url) as store:
        await store.create_task(make_task("t1"))
    async with await open_store(_read_only(postgres_url), create=False) as store:
        assert (await store.get_task("t1")).id == "t1"
        with pytest.raises(StoreReadOnly) as caught:
            await store.append_event(make_event("t1", "refused"))
        assert await store.list_events("t1") == []
    database = postgres_url.rsplit("/", 1)[1]
    assert "is read-only" in caught.value.message and f"database {database!r}" in caught.value.message


@pytest.mark.empty_database
async def test_an_empty_read_only_postgresql_database_cannot_be_migrated(postgres_url: str) -> None:
    with pytest.raises(StoreReadOnly, match="could not check or migrate the schema"):
        await open_store(_read_only(postgres_url))


@pytest.mark.parametrize(
    ("sqlstate", "expected"),
    [
        ("53100", StoreFull),  # disk_full
        ("25006", StoreReadOnly),  # read_only_sql_transaction
        ("53200", StoreUnavailable),  # out_of_memory
        ("57P01", StoreUnavailable),  # admin_shutdown
        ("08006", StoreUnavailable),  # connection_failure
        ("40P01", StoreUnavailable),  # deadlock_detected
        ("55P03", StoreUnavailable),  # lock_not_available
        ("42601", StoreError),  # syntax_error: nothing to wait for
    ],
)
def test_postgresql_errors_become_the_store_error_of_their_kind(
    sqlstate: str, expected: type[StoreError]
) -> None:
    error = psycopg.errors.lookup(sqlstate)("the server's words")
    translated = server_error(Target("db.example", "5432", "work"), error)
    assert type(translated) is expected
    assert translated.message.startswith("PostgreSQL database 'work' on db.example:5432: ")
    assert "the server's words" in translated.message


def test_the_server_s_words_never_carry_the_password() -> None:
    target = Target.of("postgresql://u:hunter2@db.example/work")
    error = psycopg.errors.lookup("08006")("could not use password hunter2")
    assert "hunter2" not in server_error(target, error).message


def test_store_full_and_read_only_are_the_kinds_of_unavailable_a_person_fixes() -> None:
    assert issubclass(StoreFull, StoreUnavailable) and issubclass(StoreReadOnly, StoreUnavailable)
    assert issubclass(StoreUnavailable, StoreError)
