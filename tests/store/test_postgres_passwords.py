"""A PostgreSQL password that never appears in a command line: a passfile, as libpq reads one.

The role these tests connect as must give its password (SCRAM, rules added to
the test cluster's ``pg_hba.conf`` for it alone); the URL names no password.
It comes from ``?passfile=FILE`` in the URL, or from ``PGPASSFILE`` (whose
default is ``~/.pgpass``); a passfile that holds a wrong password is one
line saying the server refused, naming no password.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.errors import StoreUnavailable
from ratchet.store import open_store

from ..helpers.builders import make_task
from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env
from ..helpers.pg import Cluster

ROLE = "ratchet_passworded"


@pytest.fixture
def password(postgres: Cluster) -> str:
    """The role's password, new for each test."""
    chosen = secrets.token_hex(12)
    postgres.require_password(ROLE, chosen)
    return chosen


@pytest.fixture
def database(postgres: Cluster, password: str) -> Iterator[str]:
    """A fresh database the role owns; its name."""
    name = f"pw_{secrets.token_hex(4)}"
    with postgres.admin() as conn:
        conn.execute(f"CREATE DATABASE {name} OWNER {ROLE}")
    try:
        yield name
    finally:
        with postgres.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _passfile(path: Path, cluster: Cluster, password: str) -> Path:
    path.write_text(f"localhost:{cluster.port}:*:{ROLE}:{password}\n")
    path.chmod(0o600)  # libpq ignores a passfile others may read
    return path


def _url(cluster: Cluster, database: str, query: str = "") -> str:
    return f"postgresql://{ROLE}@localhost:{cluster.port}/{database}" + (f"?{query}" if query else "")


async def _stores_and_reads_a_task(url: str) -> None:
    store = await open_store(url)
    try:
        await store.create_task(make_task("t1"))
        assert (await store.get_task("t1")).id == "t1"
    finally:
        await store.close()


async def test_a_passfile_named_in_the_url_gives_the_password(
    postgres: Cluster, database: str, password: str, tmp_path: Path
) -> None:
    passfile = _passfile(tmp_path / "pgpass", postgres, password)
    url = _url(postgres, database, f"passfile={passfile}&pool_size=2")

    await _stores_and_reads_a_task(url)

    assert password not in url


async def test_pgpassfile_gives_the_password_to_a_url_without_one(
    postgres: Cluster, database: str, password: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPASSFILE", str(_passfile(tmp_path / "pgpass", postgres, password)))

    await _stores_and_reads_a_task(_url(postgres, database))


async def test_a_wrong_password_in_the_passfile_is_refused_in_one_line(
    postgres: Cluster, database: str, password: str, tmp_path: Path
) -> None:
    wrong = _passfile(tmp_path / "pgpass", postgres, "not-" + password)

    with pytest.raises(StoreUnavailable) as caught:
        await open_store(_url(postgres, database, f"passfile={wrong}"))

    message = caught.value.message
    assert f"cannot connect to PostgreSQL database {database!r} on localhost:{postgres.port}" in message
    assert "password authentication failed" in message
    assert "\n" not in message and password not in message


def test_the_cli_with_a_wrong_passfile_says_so_in_one_line(
    postgres: Cluster, database: str, password: str, tmp_path: Path
) -> None:
    wrong = _passfile(tmp_path / "pgpass", postgres, "not-" + password)

    done = subprocess.run(
        ratchet_command("tasks", "--store", _url(postgres, database, f"passfile={wrong}")),
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert_one_line_error(done, "password authentication failed", database)
