"""The SQLite schema: fresh equals migrated; foreign, newer and broken files are refused untouched."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from ratchet.errors import NotARatchetDatabase, SchemaTooNew, StoreError, StoreNotFound
from ratchet.store import catalogue, open_store
from ratchet.store.sqlite import migrate


def _schema_of(path: Path) -> dict[str, object]:
    """The schema as structure (columns, keys, indexes), not as the text that made it."""
    with sqlite3.connect(path) as conn:
        names = [
            (kind, name)
            for kind, name in conn.execute(
                "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        shape: dict[str, object] = {
            "objects": names,
            "without rowid": sorted(row[1] for row in conn.execute("PRAGMA table_list") if row[4]),
        }
        for kind, name in names:
            if kind == "table":
                shape[name] = conn.execute(f"PRAGMA table_info({name})").fetchall()
                shape[f"{name} indexes"] = [
                    (unique, conn.execute(f"PRAGMA index_info({index})").fetchall())
                    for _, index, unique, *_ in conn.execute(f"PRAGMA index_list({name})")
                ]
    return shape


def _fresh(path: Path, *, fresh_from_schema: bool) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert migrate(conn, fresh_from_schema=fresh_from_schema) == catalogue.latest_version("sqlite")
    finally:
        conn.close()
    return path


def test_fresh_schema_equals_migrated_schema(tmp_path: Path) -> None:
    from_schema = _schema_of(_fresh(tmp_path / "schema.db", fresh_from_schema=True))
    from_migrations = _schema_of(_fresh(tmp_path / "migrated.db", fresh_from_schema=False))
    assert from_schema == from_migrations
    assert {name for kind, name in from_schema["objects"] if kind == "table"} >= {
        "tasks", "steps", "operations", "messages", "events", "artifacts",
        "triggers", "checkpoints", "sessions", "leases", "lease_claims",
        "ratchet_schema_version",
    }


def test_migrating_twice_changes_nothing(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "r.db", fresh_from_schema=True)
    before = _schema_of(path)
    _fresh(path, fresh_from_schema=True)
    assert _schema_of(path) == before
    with sqlite3.connect(path) as conn:
        versions = [v for (v,) in conn.execute("SELECT version FROM ratchet_schema_version")]
    assert versions == list(range(1, catalogue.latest_version("sqlite") + 1))


async def test_store_reports_the_latest_version(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path}/r.db")
    try:
        assert await store.schema_version() == catalogue.latest_version("sqlite")
    finally:
        await store.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_a_newer_schema_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = _fresh(tmp_path / "r.db", fresh_from_schema=True)
    latest = catalogue.latest_version("sqlite")
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO ratchet_schema_version VALUES (?, 0)", (latest + 7,))
    before = _digest(path)
    with pytest.raises(SchemaTooNew) as caught:
        await open_store(f"sqlite:///{path}")
    assert f"version {latest + 7}" in str(caught.value)
    assert f"version {latest}" in str(caught.value)
    assert _digest(path) == before


@pytest.mark.parametrize("create", [True, False])
async def test_a_text_file_is_refused_and_left_untouched(tmp_path: Path, create: bool) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# not a database\n" * 50)
    before = _digest(path)
    with pytest.raises(NotARatchetDatabase, match="not a Ratchet database"):
        await open_store(f"sqlite:///{path}", create=create)
    assert _digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md"]


async def test_another_programs_sqlite_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE birds (name TEXT)")
        conn.execute("INSERT INTO birds VALUES ('wren')")
    before = _digest(path)
    with pytest.raises(NotARatchetDatabase, match="something else"):
        await open_store(f"sqlite:///{path}")
    assert _digest(path) == before


async def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist") as caught:
        await open_store(f"sqlite:///{tmp_path}/no/such/dir/r.db", create=False)
    assert not isinstance(caught.value, StoreNotFound)
    assert not (tmp_path / "no").exists()


async def test_a_missing_file_is_not_created_when_create_is_false(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFound, match="ratchet migrate"):
        await open_store(f"sqlite:///{tmp_path}/r.db", create=False)
    assert list(tmp_path.iterdir()) == []
