"""A real PgBouncer in transaction pooling mode, in front of the tests' throwaway PostgreSQL cluster.

PgBouncer runs from Debian's ``pgbouncer`` package (scripts/install-system-packages
installs it), with an ini file and an auth file of its own in a temporary
directory, on a free port of localhost. Every database of the cluster is
reachable through it by name (a ``*`` entry), so a test's fresh database
(`Cluster.create_database`) is reachable through the one PgBouncer of the
session. PgBouncer refuses to run as root: as root it runs as the ``postgres``
user, as the cluster does.

Each database gets a pool of up to `Bouncer.pool_size` server connections,
fewer than a worker's client connections: clients share them transaction by
transaction, as behind a production PgBouncer.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from .pg import SERVER_USER, Cluster, free_port

__all__ = ["INSTALL_HINT", "Bouncer", "find_pgbouncer", "running_bouncer"]

INSTALL_HINT = "PgBouncer not found (the 'pgbouncer' program): run scripts/install-system-packages"
START_TIMEOUT = 20.0  # seconds PgBouncer may take to listen


def find_pgbouncer() -> Path | None:
    """The ``pgbouncer`` program: on PATH, else where Debian puts it (``/usr/sbin``, off a user's PATH)."""
    found = shutil.which("pgbouncer")
    if found:
        return Path(found)
    debian = Path("/usr/sbin/pgbouncer")
    return debian if debian.exists() else None


class Bouncer:
    """A running PgBouncer (``pool_mode = transaction``) in front of `cluster`, on localhost."""

    def __init__(self, program: Path, cluster: Cluster, *, pool_size: int = 4) -> None:
        self.program = program
        self.cluster = cluster
        self.pool_size = pool_size
        self.root = Path(tempfile.mkdtemp(prefix="ratchet-pgbouncer-"))
        self.port = 0
        self.log = self.root / "pgbouncer.log"
        self._process: subprocess.Popen[bytes] | None = None
        self._as_server_user = os.geteuid() == 0
        if self._as_server_user:
            shutil.chown(self.root, SERVER_USER)  # its files are read (and its log written) as that user

    def _config(self) -> str:
        return "\n".join(
            [
                "[databases]",
                # Any database name, to the database of that name on the cluster.
                f"* = host=localhost port={self.cluster.port}",
                "[pgbouncer]",
                "pool_mode = transaction",
                "listen_addr = 127.0.0.1",
                f"listen_port = {self.port}",
                "unix_socket_dir =",
                "auth_type = trust",
                f"auth_file = {self.root / 'users.txt'}",
                f"logfile = {self.log}",
                f"pidfile = {self.root / 'pgbouncer.pid'}",
                f"default_pool_size = {self.pool_size}",
                "min_pool_size = 0",
                "reserve_pool_size = 0",
                "max_client_conn = 1000",
                # A test's database is dropped (WITH FORCE) when the test ends: retry a login soon.
                "server_login_retry = 1",
                "",
            ]
        )

    def start(self) -> None:
        """Write its files and start it on a free port (trying a few in case one is taken)."""
        users = self.root / "users.txt"
        users.write_text(f'"{SERVER_USER}" ""\n')
        for attempt in range(5):
            self.port = free_port()
            ini = self.root / "pgbouncer.ini"
            ini.write_text(self._config())
            for path in (users, ini):
                if self._as_server_user:
                    shutil.chown(path, SERVER_USER)
            # Started as that user itself (not through runuser): the signals that stop it reach it.
            user = SERVER_USER if self._as_server_user else None
            self._process = subprocess.Popen(
                [str(self.program), "-q", str(ini)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                user=user,
                group=user,
                extra_groups=[] if user else None,
            )
            if self._wait_listening():
                return
            self._end()
            if attempt == 4:
                raise RuntimeError(f"PgBouncer did not start:\n{self._log_tail()}")

    def _wait_listening(self) -> bool:
        assert self._process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        return False

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"

    def _end(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)  # PgBouncer's immediate shutdown
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop(self) -> None:
        """Stop PgBouncer and remove its files."""
        try:
            self._end()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """The URL of `database` on the cluster, through PgBouncer."""
        return f"postgresql://{SERVER_USER}@127.0.0.1:{self.port}/{database}"

    def through(self, direct_url: str) -> str:
        """`direct_url` (a database of the cluster, options kept) as reached through PgBouncer."""
        prefix = self.cluster.url("")
        assert direct_url.startswith(prefix), direct_url
        return self.url(direct_url[len(prefix) :])


@contextlib.contextmanager
def running_bouncer(cluster: Cluster, *, pool_size: int = 4) -> Iterator[Bouncer]:
    """A PgBouncer in front of `cluster` for the block, stopped and removed after it.

    Raises:
        RuntimeError: no ``pgbouncer`` program (the message says how to install it), or it did not start.
    """
    program = find_pgbouncer()
    if program is None:
        raise RuntimeError(INSTALL_HINT)
    bouncer = Bouncer(program, cluster, pool_size=pool_size)
    try:
        bouncer.start()
        yield bouncer
    finally:
        bouncer.stop()
