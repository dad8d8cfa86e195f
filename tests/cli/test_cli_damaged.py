"""A damaged database, through `ratchet`: one line and exit 2, the file left as it was; --force-open
opens an SQLite file that fails its integrity check anyway."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.cli import RunRatchet, assert_one_line_error
from ..helpers.raw_sql import fill_sqlite_store, garble_last_pages, run_sql


async def _store_with_a_task(url: str) -> None:
    store = await open_store(url)
    try:
        await store.create_task(make_task("t1"))
    finally:
        await store.close()


@pytest.mark.parametrize(
    "damage", ["DROP TABLE ratchet_schema_version", "DELETE FROM ratchet_schema_version"]
)
def test_ratchet_tables_without_a_schema_version_are_refused_in_one_line(
    run_ratchet: RunRatchet, url: str, damage: str
) -> None:
    asyncio.run(_store_with_a_task(url))
    run_sql(url, damage)

    for command in (["tasks"], ["show", "t1"], ["worker", "--until-idle"], ["migrate"]):
        done = run_ratchet(*command, "--store", url)

        assert_one_line_error(done, "has Ratchet tables but no readable schema version")
    assert run_sql(url, "SELECT id FROM tasks") == [("t1",)]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_garbled_sqlite_file_is_refused_in_one_line_and_force_open_opens_it(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    path = tmp_path / "r.db"
    asyncio.run(fill_sqlite_store(path))
    garble_last_pages(path)
    url = f"sqlite:///{path}"
    before = _digest(path)

    for command in (["tasks"], ["events", "t0"], ["worker", "--until-idle"], ["migrate"]):
        done = run_ratchet(*command, "--store", url)

        line = assert_one_line_error(done, f"the database at {path} fails its integrity check (")
        assert line.endswith("or pass --force-open to open it anyway")
    assert _digest(path) == before

    forced = run_ratchet("tasks", "--json", "--store", url, "--force-open")

    assert forced.returncode == 0, forced.stderr
    assert [task["task_id"] for task in json.loads(forced.stdout)] == ["t0", "t1", "t2"]
