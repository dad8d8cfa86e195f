"""`ratchet langgraph import`: a real SqliteSaver file or PostgresSaver database, copied by the real
program into a Ratchet store, reads back through RatchetSaver as its own saver returns it, and a graph
goes on from an imported thread."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from ratchet.integrations.langgraph import RatchetSaver

from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env
from ..helpers.pg import Cluster
from .langgraph_tools_graph import LEDGER_ENV, START_INPUT, build, outcome

FINISHED, WAITING = "finished", "waiting"  # a thread run to its end; one stopped at the approval


def thread(thread_id: str) -> Any:
    return {"configurable": {"thread_id": thread_id}}


@contextlib.contextmanager
def source_saver(
    kind: str, tmp_path: Path, postgres: Cluster
) -> Iterator[tuple[str, BaseCheckpointSaver[Any]]]:
    """A LangGraph saver of `kind` on a fresh database, and the URL `--from` names it by."""
    if kind == "sqlite":
        path = tmp_path / "langgraph.db"
        with SqliteSaver.from_conn_string(str(path)) as saver:
            yield f"sqlite:///{path}", saver
        return
    with postgres.database(empty=True) as url, PostgresSaver.from_conn_string(url) as server_saver:
        server_saver.setup()
        yield url, server_saver


def fill(saver: BaseCheckpointSaver[Any]) -> None:
    """Two threads: one run to its end (through the approval), one stopped at the approval."""
    graph = build(saver)
    graph.invoke(START_INPUT, thread(FINISHED))
    graph.invoke(Command(resume="yes"), thread(FINISHED))
    graph.invoke(START_INPUT, thread(WAITING))


def run_import(source: str, store: str) -> dict[str, Any]:
    done = subprocess.run(
        ratchet_command("langgraph", "import", "--from", source, "--store", store, "--json"),
        capture_output=True,
        text=True,
        env=ratchet_env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def key(found: CheckpointTuple) -> tuple[str, str, str]:
    where = found.config["configurable"]
    return where["thread_id"], where["checkpoint_ns"], where["checkpoint_id"]


def assert_same(ours: CheckpointTuple | None, theirs: CheckpointTuple) -> None:
    assert ours is not None
    assert key(ours) == key(theirs)
    assert ours.checkpoint == theirs.checkpoint
    assert ours.metadata == theirs.metadata
    assert ours.parent_config == theirs.parent_config
    assert ours.pending_writes == theirs.pending_writes


def assert_holds_the_source(saver: RatchetSaver, source: BaseCheckpointSaver[Any]) -> int:
    """Every checkpoint of the source reads back the same, listed in the same order; their number."""
    theirs = list(source.list(None))
    namespaces = {
        (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_ns"]) for t in theirs
    }
    assert len(namespaces) > 2  # the subgraph's checkpoints are a namespace of their own
    for each in theirs:
        assert_same(saver.get_tuple(each.config), each)
    for thread_id, ns in namespaces:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        ours = list(saver.list(config))
        assert [key(t) for t in ours] == [key(t) for t in source.list(config)]
        assert_same(saver.get_tuple(config), next(iter(source.list(config, limit=1))))
    return len(theirs)


@pytest.mark.parametrize("source_kind", ["sqlite", "postgres"])
def test_an_imported_database_reads_back_as_its_saver_returns_it_and_its_threads_go_on(
    source_kind: str, url: str, tmp_path: Path, postgres: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "ledger.txt"))
    with source_saver(source_kind, tmp_path, postgres) as (source_url, source):
        fill(source)
        imported = run_import(source_url, url)
        with RatchetSaver.from_conn_string(url) as saver:
            total = assert_holds_the_source(saver, source)
        assert imported["checkpoints"] == total
        assert imported["threads"] == 2
        assert imported["skipped"] == 0
        assert imported["writes"] > 0

        again = run_import(source_url, url)  # idempotent: nothing copied twice
        assert (again["threads"], again["checkpoints"], again["skipped"]) == (0, 0, total)
        with RatchetSaver.from_conn_string(url) as saver:
            assert assert_holds_the_source(saver, source) == total

            # The waiting thread goes on from the store, as the finished one did from the source.
            graph = build(saver)
            assert graph.get_state(thread(WAITING)).next == ("approve",)
            graph.invoke(Command(resume="yes"), thread(WAITING))
            finished = outcome(build(source).get_state(thread(FINISHED)).values)
            assert outcome(graph.get_state(thread(WAITING)).values) == finished
            assert outcome(graph.get_state(thread(FINISHED)).values) == finished
    assert (tmp_path / "ledger.txt").read_text().split() == ["e0", "e1", "e2", "e0", "e1", "e2"]


def test_an_import_stopped_half_way_is_finished_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "ledger.txt"))
    path, store = tmp_path / "langgraph.db", f"sqlite:///{tmp_path / 'ratchet.db'}"
    with SqliteSaver.from_conn_string(str(path)) as source:
        fill(source)
        total = len(list(source.list(None)))
    # Half the source, as a run stopped half-way leaves the store (the newest copied checkpoint without its
    # writes): the first checkpoints of a copy of the file.
    half = tmp_path / "half.db"
    with sqlite3.connect(path) as conn, sqlite3.connect(half) as copy:
        conn.backup(copy)
    with sqlite3.connect(half) as copy:
        copy.execute(
            "DELETE FROM checkpoints WHERE checkpoint_id > (SELECT checkpoint_id FROM checkpoints"
            " WHERE checkpoint_ns = '' ORDER BY checkpoint_id LIMIT 1 OFFSET 6)"
        )
        newest = copy.execute("SELECT max(checkpoint_id) FROM checkpoints").fetchone()[0]
        copy.execute("DELETE FROM writes WHERE checkpoint_id >= ?", (newest,))
    before = half.read_bytes()
    first = run_import(f"sqlite:///{half}", store)
    assert 0 < first["checkpoints"] < total
    assert half.read_bytes() == before  # the source is only read

    second = run_import(f"sqlite:///{path}", store)
    assert second["skipped"] == first["checkpoints"]
    assert second["checkpoints"] == total - first["checkpoints"]
    with RatchetSaver.from_conn_string(store) as saver, SqliteSaver.from_conn_string(str(path)) as source:
        assert assert_holds_the_source(saver, source) == total


@pytest.mark.empty_database
def test_bad_sources_are_refused_in_one_line(tmp_path: Path, postgres_url: str) -> None:
    store = f"sqlite:///{tmp_path / 'ratchet.db'}"
    not_langgraph = tmp_path / "other.db"
    with sqlite3.connect(not_langgraph) as conn:
        conn.execute("CREATE TABLE t (x)")
    (tmp_path / "text.db").write_text("not a database")
    cases = {
        f"sqlite:///{tmp_path / 'missing.db'}": "no SQLite file",
        f"sqlite:///{not_langgraph}": "is not a SqliteSaver database",
        f"sqlite:///{tmp_path / 'text.db'}": "is not a SQLite database",
        postgres_url: "is not a PostgresSaver database",
        "mysql://somewhere/db": "give sqlite:///PATH",
        "old.db": "give sqlite:///PATH",
    }
    for source, expected in cases.items():
        done = subprocess.run(
            ratchet_command("langgraph", "import", "--from", source, "--store", store),
            capture_output=True,
            text=True,
            env=ratchet_env(),
            timeout=60,
        )
        assert_one_line_error(done, expected)
    assert not (tmp_path / "missing.db").exists()  # the source is only read, never made
    with sqlite3.connect(not_langgraph) as conn:
        assert [row[0] for row in conn.execute("SELECT name FROM sqlite_master")] == ["t"]
