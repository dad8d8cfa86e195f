"""Fixtures every suite shares: stores, a Runtime over one, scripts for the scripted model, ledgers.

`store` is every kind of store in turn; a suite that runs on one kind only
overrides `store_kind` (the agent tests keep theirs in SQLite), and
`each_store` still gives every kind to the tests there that want them all.
"""

from __future__ import annotations

import compileall
import json
import os
import secrets
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ratchet
from ratchet.runtime import Runtime
from ratchet.store import StateStore
from ratchet.trust.code import ALLOW_CODE_ENV
from ratchet.trust.seal import KEY_ENV

from .helpers.agent_tools import LEDGER_VARIABLE
from .helpers.disk import SmallDisk
from .helpers.ledger import Ledger
from .helpers.pg import Cluster
from .helpers.pgbouncer import INSTALL_HINT as PGBOUNCER_HINT
from .helpers.pgbouncer import Bouncer, find_pgbouncer
from .helpers.stores import POSTGRES, STORE_URLS, discard, opened

# The tests' workflows and tools live in this checkout, but many `ratchet` programs under test run
# in a temporary directory (their project root): the checkout's code is admitted as an operator
# would admit it, for every process the tests start (they inherit the environment).
os.environ[ALLOW_CODE_ENV] = str(Path(__file__).resolve().parents[1])
# One signing key for the whole session, in every process the tests start: a task one
# process seals, any other checks, as when every process of a deployment holds one key.
os.environ[KEY_ENV] = secrets.token_hex(32)


def pytest_configure(config: pytest.Config) -> None:
    """Compile Ratchet's and the tests' code once, before any test starts a program.

    The suite starts thousands of `ratchet` processes, and each imports the
    checkout afresh. Where PYTHONDONTWRITEBYTECODE is set (CI machines set it)
    none of them writes the bytecode it compiles, so each compiled every module
    again: about a third of a command's start. Compiled here, they read it.
    """
    if not hasattr(config, "workerinput"):  # once, in the process that starts pytest-xdist's workers
        for package in (Path(ratchet.__file__).parent, Path(__file__).parent):
            compileall.compile_dir(package, quiet=1)


@pytest.fixture(scope="session", autouse=True)
def _stop_postgres_at_the_end() -> Iterator[None]:
    """Stop the session's PostgreSQL cluster, if a test started it."""
    yield
    POSTGRES.stop()


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-user state directory (RATCHET_HOME's default) under the test's directory, for the
    test and the programs it starts: no test leaves workspaces in the home of whoever runs it."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))


@pytest.fixture(params=sorted(STORE_URLS))
def store_kind(request: pytest.FixtureRequest) -> str:
    """The kind of store `store` is: every kind in turn, unless a suite narrows it."""
    return str(request.param)


@pytest.fixture
def store_url(store_kind: str, tmp_path: Path) -> Iterator[str]:
    """The URL of a fresh, empty store of `store_kind`, discarded after the test."""
    url = STORE_URLS[store_kind](tmp_path)
    try:
        yield url
    finally:
        discard(url)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store the test shares with the programs it starts: a SQLite file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ratchet.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[StateStore]:
    """The store at `store_url`, open for the test."""
    async with opened(store_url) as store:
        yield store


@pytest.fixture(params=sorted(STORE_URLS))
async def each_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StateStore]:
    """Every kind of store in turn, open, whatever kind the suite's `store` is."""
    url = STORE_URLS[request.param](tmp_path)
    try:
        async with opened(url) as store:
            yield store
    finally:
        discard(url)


@pytest.fixture
def rt(store: StateStore) -> Runtime:
    return Runtime(store)


@pytest.fixture
def script(tmp_path: Path) -> Callable[[dict[str, Any]], str]:
    """Write a scripted-model script; return the model string that names it."""

    def write(content: dict[str, Any]) -> str:
        path = tmp_path / f"script{len(list(tmp_path.glob('script*.json')))}.json"
        path.write_text(json.dumps(content), encoding="utf-8")
        return f"scripted:{path}"

    return write


@pytest.fixture
def ledger(tmp_path: Path) -> str:
    """The path of a JSON-lines ledger the tools of `tests.engine.flows` and `tests.helpers.people_flows`
    append to (the file is created by the first entry)."""
    return str(tmp_path / "ledger.jsonl")


@pytest.fixture
def tools_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """The `Ledger` the tools of `tests.helpers.agent_tools` act on, named by the environment
    (workers inherit it)."""
    book = Ledger(tmp_path / "ledger.db")
    book.create()
    monkeypatch.setenv(LEDGER_VARIABLE, book.path)
    return book


@pytest.fixture
def postgres() -> Cluster:
    """The session's PostgreSQL cluster (started on first use)."""
    return POSTGRES.get()


@pytest.fixture
def postgres_url(postgres: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a fresh PostgreSQL store (Ratchet's schema, no rows), dropped after the test.

    A test marked ``empty_database`` gets a database without Ratchet's schema instead.
    """
    empty = request.node.get_closest_marker("empty_database") is not None
    with postgres.database(empty=empty) as url:
        yield url


@pytest.fixture(scope="session")
def pgbouncer() -> Iterator[Bouncer]:
    """A real PgBouncer in transaction pooling mode before the session's PostgreSQL cluster, one a session."""
    program = find_pgbouncer()
    if program is None:
        pytest.fail(PGBOUNCER_HINT, pytrace=False)
    bouncer = Bouncer(program, POSTGRES.get())
    try:
        bouncer.start()
    except RuntimeError as exc:
        bouncer.stop()
        pytest.fail(str(exc), pytrace=False)
    yield bouncer
    bouncer.stop()


@pytest.fixture
def pgbouncer_url(pgbouncer: Bouncer, postgres_url: str) -> str:
    """A fresh PostgreSQL store (as `postgres_url`), reached through `pgbouncer`: only the pooler's URL."""
    return pgbouncer.through(postgres_url)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A directory of a few megabytes that the test fills up, frees, or makes read-only
    (a tmpfs of its own where the tests may mount one; see tests/helpers/disk.py)."""
    disk = SmallDisk(tmp_path / "disk")
    try:
        yield disk
    finally:
        disk.close()
