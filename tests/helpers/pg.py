"""A throwaway PostgreSQL cluster for the tests, and a fresh database per test.

The cluster starts the first time a test asks for a database (so suites that
never touch PostgreSQL don't pay for it) and is stopped and removed at the end
of the session. It runs from the server binaries on PATH or the newest
``/usr/lib/postgresql/*/bin``; without them, tests that need it fail with the
command that installs them. PostgreSQL refuses to run as root, so as root the
server runs as the ``postgres`` user.

A cluster may hold a template, a database built once that each new database
copies (``CREATE DATABASE ... TEMPLATE``, as procrastinate's tests do): the
session's holds a Ratchet store, so hundreds of tests do not each build the
same schema. A test of what happens to a database without it asks for an
empty one.

Durability is off (``fsync=off``): a test database lives for one test.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

__all__ = [
    "DURABLE_SETTINGS",
    "SETTINGS",
    "Cluster",
    "LazyCluster",
    "find_binaries",
    "free_port",
    "throwaway_cluster",
]

TEMPLATE = "tests_template"
INSTALL_HINT = "PostgreSQL server binaries (initdb, pg_ctl) not found: run scripts/install-system-packages"
SERVER_USER = "postgres"
SETTINGS = (
    "-c listen_addresses=localhost -c fsync=off -c synchronous_commit=off "
    "-c full_page_writes=off -c max_connections=400"
)
DURABLE_SETTINGS = (
    SETTINGS.replace("fsync=off", "fsync=on")
    .replace("synchronous_commit=off", "synchronous_commit=on")
    .replace("full_page_writes=off", "full_page_writes=on")
)
"""As `SETTINGS`, but a commit waits for the disk, as in production (a bench of commits wants it)."""


def find_binaries() -> Path | None:
    """The directory of the server programs (``initdb``, ``pg_ctl``...): PATH first, else the newest."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    # Resolved: a link on PATH stands for the installed version's directory, which also holds the
    # programs the replication tests run (pg_basebackup) that no one links.
    if initdb and pg_ctl and Path(initdb).resolve().parent == Path(pg_ctl).resolve().parent:
        return Path(initdb).resolve().parent
    versions = []
    for candidate in Path("/usr/lib/postgresql").glob("*/bin"):
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            with contextlib.suppress(ValueError):
                versions.append((float(candidate.parent.name), candidate))
    return max(versions)[1] if versions else None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        port: int = probe.getsockname()[1]
        return port


class Cluster:
    """A running PostgreSQL server in a temporary directory, reachable on localhost."""

    def __init__(self, binaries: Path, *, settings: str = SETTINGS) -> None:
        self.binaries = binaries
        self.settings = settings  # the server's -c options (a bench may want commits that wait for the disk)
        self.root = Path(tempfile.mkdtemp(prefix="ratchet-pg-"))  # pytest's tmp dirs are 0700 root
        self.data = self.root / "data"
        self.port = 0
        self._template: str | None = None
        self._names = itertools.count(1)
        self._lock = threading.Lock()
        self._as_server_user = os.geteuid() == 0
        if self._as_server_user:
            try:
                shutil.chown(self.root, SERVER_USER)
            except LookupError:
                raise RuntimeError(
                    f"as root, the tests run PostgreSQL as the user {SERVER_USER!r}, and there is none: "
                    "run scripts/install-system-packages (its package creates the user)"
                ) from None

    def run(self, *args: str) -> None:
        """Run one of the server's programs (as the server's user when root); raise if it fails."""
        command = [str(self.binaries / args[0]), *args[1:]]
        if self._as_server_user:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def start(self) -> None:
        """Create the cluster and start the server on a free port (trying a few in case one is taken)."""
        self.run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        for attempt in range(5):
            self.port = free_port()
            options = f"-p {self.port} -k {self.data} {self.settings}"
            try:
                log = str(self.root / "server.log")
                self.run("pg_ctl", "start", "-w", "-D", str(self.data), "-l", log, "-o", options)
                return
            except RuntimeError:
                if attempt == 4:
                    raise

    def stop(self) -> None:
        """Stop the server at once and remove its files."""
        try:
            if self.port:
                self.run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@localhost:{self.port}/{database}"

    def admin(self) -> psycopg.Connection:
        """A connection to the ``postgres`` database, for creating and dropping others."""
        return psycopg.connect(self.url(), autocommit=True)

    def make_template(self, build: Callable[[str], None]) -> None:
        """Build the template every `create_database` copies from now on; `build` is given its URL.

        Once built, the template takes no connections: a copy fails while anyone
        is connected to its source, and a connection left open by `build` (or made
        later) would fail every test after it.
        """
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {TEMPLATE}")
        build(self.url(TEMPLATE))
        with self.admin() as conn:
            conn.execute(f"ALTER DATABASE {TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
        self._template = TEMPLATE

    def create_database(self, *, empty: bool = False) -> str:
        """Create a fresh database, a copy of the template (empty if `empty` or there is none); its URL."""
        with self._lock:
            name = f"t_{next(self._names)}"
        source = "" if empty or self._template is None else f" TEMPLATE {self._template}"
        with self.admin() as conn:
            conn.execute(f"CREATE DATABASE {name}{source}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop the database at `url`, closing whatever is still connected to it."""
        name = url.rsplit("/", 1)[1].partition("?")[0]  # a store URL may carry options
        with self.admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def require_password(self, role: str, password: str) -> None:
        """Make `role` a login that must give `password` (SCRAM) over TCP; every other role stays trusted.

        Its rules go first in ``pg_hba.conf`` (the first that matches decides);
        done once per role, then the server reloads its configuration.
        """
        hba = self.data / "pg_hba.conf"
        rules = "".join(f"host all {role} {net} scram-sha-256\n" for net in ("127.0.0.1/32", "::1/128"))
        with self._lock:
            current = hba.read_text()
            if rules not in current:
                hba.write_text(rules + current)  # in place: the server's user keeps owning it
        with self.admin() as conn:
            known = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
            verb = "ALTER" if known else "CREATE"
            conn.execute(f"{verb} ROLE {role} LOGIN PASSWORD '{password}'")
            conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 10  # the server reloads when it gets to it
        while time.monotonic() < deadline:
            try:
                url = f"postgresql://{role}@localhost:{self.port}/postgres"
                psycopg.connect(url, passfile=os.devnull).close()
            except psycopg.OperationalError:
                return  # refused without its password: the rules are in force
            time.sleep(0.05)
        raise RuntimeError(f"the server did not start asking {role} for a password")

    @contextlib.contextmanager
    def database(self, *, empty: bool = False) -> Iterator[str]:
        """A fresh database for the block (as `create_database` makes it), dropped afterwards."""
        url = self.create_database(empty=empty)
        try:
            yield url
        finally:
            self.drop_database(url)


@contextlib.contextmanager
def throwaway_cluster(*, settings: str = SETTINGS) -> Iterator[Cluster]:
    """A PostgreSQL server of its own for the block (a bench's), stopped and removed after it.

    Raises:
        RuntimeError: no server binaries (the message says how to install them), no server user
            to run them as root, or the server did not start.
    """
    binaries = find_binaries()
    if binaries is None:
        raise RuntimeError(INSTALL_HINT)
    cluster = Cluster(binaries, settings=settings)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


class LazyCluster:
    """The session's cluster, started on first use (from any thread) and stopped by `stop`.

    With `template`, the cluster's template is built by it as the cluster starts
    (see `Cluster.make_template`). If the cluster cannot start, every test that
    needs it fails with the same reason (the start is not tried again).
    """

    def __init__(self, *, template: Callable[[str], None] | None = None) -> None:
        self._build_template = template
        self._cluster: Cluster | None = None
        self._failure: str | None = None
        self._lock = threading.Lock()

    def get(self) -> Cluster:
        """The running cluster; the first call starts it. Fails the test if it cannot start."""
        with self._lock:
            if self._cluster is None and self._failure is None:
                self._failure = INSTALL_HINT
                binaries = find_binaries()
                if binaries is not None:
                    self._cluster, self._failure = self._start(binaries, self._build_template)
            if self._cluster is None:
                assert self._failure is not None  # set whenever no cluster started
                pytest.fail(self._failure, pytrace=False)
            return self._cluster

    @staticmethod
    def _start(
        binaries: Path, build_template: Callable[[str], None] | None
    ) -> tuple[Cluster | None, str | None]:
        try:
            cluster = Cluster(binaries)
        except RuntimeError as refused:
            return None, str(refused)
        try:
            cluster.start()
        except Exception as exc:
            cluster.stop()
            return None, f"the test PostgreSQL server did not start: {exc}"
        if build_template is not None:
            try:
                cluster.make_template(build_template)
            except Exception as exc:
                cluster.stop()
                return None, f"the test PostgreSQL template database could not be built: {exc!r}"
        return cluster, None

    def stop(self) -> None:
        with self._lock:
            if self._cluster is not None:
                self._cluster.stop()
                self._cluster = None
