"""Damaged databases are refused as they open, in one line, and left as they were.

A schema-version table that is missing, empty or holds no version, beside
Ratchet's tables (both dialects); an SQLite file whose pages fail
``PRAGMA quick_check`` (PostgreSQL has no quick equivalent), which
``integrity_check=False`` (``--force-open``) opens anyway.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from ratchet.errors import DamagedDatabase, NotARatchetDatabase
from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.raw_sql import fill_sqlite_store, garble_last_pages, run_sql

VERSION_DAMAGE = {
    "missing": (["DROP TABLE ratchet_schema_version"], "it has no ratchet_schema_version table"),
    "empty": (["DELETE FROM ratchet_schema_version"], "its ratchet_schema_version table is empty"),
    "garbage": (
        [
            "DROP TABLE ratchet_schema_version",
            "CREATE TABLE ratchet_schema_version (version TEXT, applied_at BIGINT)",
            "INSERT INTO ratchet_schema_version VALUES ('four', 0)",
        ],
        "its ratchet_schema_version table holds 'four', not a version number",
    ),
    "unreadable": (
        [
            "DROP TABLE ratchet_schema_version",
            "CREATE TABLE ratchet_schema_version (release TEXT)",
        ],
        "reading its ratchet_schema_version table failed",
    ),
}


def _tables(url: str) -> list[str]:
    if url.startswith("sqlite:"):
        found = run_sql(url, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    else:
        found = run_sql(
            url,
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() ORDER BY table_name",
        )
    return [name for (name,) in found]


async def _store_with_a_task(url: str) -> None:
    store = await open_store(url)
    try:
        await store.create_task(make_task("t1"))
    finally:
        await store.close()


# ------------------------------------------------------------------ the schema-version table


@pytest.mark.parametrize("damage", sorted(VERSION_DAMAGE))
async def test_ratchet_tables_without_a_readable_version_are_refused_untouched(url: str, damage: str) -> None:
    await _store_with_a_task(url)
    statements, why = VERSION_DAMAGE[damage]
    for statement in statements:
        run_sql(url, statement)
    tables = _tables(url)

    for create in (True, False):
        with pytest.raises(DamagedDatabase) as caught:
            await open_store(url, create=create)
        assert "has Ratchet tables but no readable schema version" in caught.value.message
        assert why in caught.value.message

    assert _tables(url) == tables  # nothing made again over what is there
    assert run_sql(url, "SELECT id FROM tasks") == [("t1",)]


@pytest.mark.empty_database
async def test_another_programs_tasks_table_is_still_another_programs_database(url: str) -> None:
    run_sql(url, "CREATE TABLE tasks (title TEXT)")

    with pytest.raises(NotARatchetDatabase, match="something else"):
        await open_store(url)

    assert _tables(url) == ["tasks"]


# ------------------------------------------------------------------ SQLite pages


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
async def garbled(tmp_path: Path) -> Path:
    path = tmp_path / "r.db"
    await fill_sqlite_store(path)
    garble_last_pages(path)
    return path


async def test_a_file_with_garbage_pages_is_refused_and_left_as_it_is(garbled: Path) -> None:
    before = _digest(garbled)

    with pytest.raises(DamagedDatabase) as caught:
        await open_store(f"sqlite:///{garbled}")

    assert f"the database at {garbled} fails its integrity check (" in caught.value.message
    assert f"sqlite3 {garbled} .recover" in caught.value.message
    assert "--force-open" in caught.value.message
    assert _digest(garbled) == before
    assert sorted(p.name for p in garbled.parent.iterdir()) == ["r.db"]


async def test_a_file_with_garbage_pages_opens_without_the_check(garbled: Path) -> None:
    store = await open_store(f"sqlite:///{garbled}", integrity_check=False)
    try:
        assert [task.id for task in await store.list_tasks()] == ["t0", "t1", "t2"]
    finally:
        await store.close()


async def test_a_file_whose_list_of_tables_is_garbage_is_refused_with_or_without_the_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.db"
    await fill_sqlite_store(path)
    with path.open("r+b") as file:  # the first page, past the 100-byte header: the schema's own table
        file.seek(100)
        file.write(random.Random(5).randbytes(4096 - 100))
    before = _digest(path)

    for integrity_check in (True, False):
        with pytest.raises(DamagedDatabase, match="is damaged") as caught:
            await open_store(f"sqlite:///{path}", integrity_check=integrity_check)
        assert "--force-open" not in caught.value.message  # it would not help
        assert ".recover" in caught.value.message
    assert _digest(path) == before
