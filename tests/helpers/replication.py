"""A PostgreSQL primary with a streaming replica, built from PostgreSQL's own binaries.

The replica is a ``pg_basebackup -R`` of the primary (so it starts as a hot
standby, streaming the primary's WAL over a replication connection), on a port
of its own. With ``synchronous=True`` the primary names it in
``synchronous_standby_names``: a commit returns only once the replica has
flushed its WAL, so promoting the replica after the primary dies loses no
commit a client was told of (what Patroni's and pg_auto_failover's synchronous
modes guarantee). Without it, replication is asynchronous: the replica may lag.

The failover and read-replica tests use it: `stop_primary` kills the primary
(``pg_ctl stop -m immediate``, as a crash), `promote` makes the replica the
primary (``pg_ctl promote``), `url` gives a libpq multi-host URL over both
servers that connects to whichever one accepts writes.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import psycopg

from .pg import INSTALL_HINT, SETTINGS, Cluster, find_binaries, free_port

__all__ = ["ReplicatedPair", "replicated_pair"]

# Commits must reach the WAL before they are acknowledged (synchronous_commit=off would answer
# first): the primary's data files may stay unsynced (fsync=off), since the tests kill the server's
# processes, never the machine, and the replica is what survives.
PRIMARY_SETTINGS = SETTINGS.replace("synchronous_commit=off", "synchronous_commit=on") + (
    " -c wal_level=replica -c max_wal_senders=5 -c wal_keep_size=64MB -c hot_standby_feedback=on"
)
STANDBY_NAME = "ratchet_replica"


class ReplicatedPair:
    """A running primary (`primary`) and its streaming replica (`replica`), each a `Cluster`."""

    def __init__(self, primary: Cluster, replica: Cluster) -> None:
        self.primary = primary
        self.replica = replica
        self.promoted = False

    def url(self, database: str = "postgres", *, writable: bool = True) -> str:
        """A multi-host URL over both servers: libpq tries each in turn.

        With `writable`, only a server that accepts writes is taken
        (``target_session_attrs=read-write``): the primary, or the replica
        once promoted.
        """
        hosts = f"localhost:{self.primary.port},localhost:{self.replica.port}"
        attrs = "?target_session_attrs=read-write" if writable else ""
        return f"postgresql://postgres@{hosts}/{database}{attrs}"

    def create_database(self) -> str:
        """A fresh empty database made on the primary (it reaches the replica by WAL); its name."""
        name = self.primary.create_database(empty=True).rsplit("/", 1)[1]
        self.wait_replayed()
        return name

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        with self.primary.admin() as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = row[0]
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.replica.url(), autocommit=True) as conn:
            while time.monotonic() < deadline:
                done = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
                if done and done[0]:
                    return
                time.sleep(0.02)
        raise RuntimeError(f"the replica did not replay up to {target} within {timeout} s")

    def stop_primary(self) -> None:
        """Kill the primary's server at once (``-m immediate``: no checkpoint, as a crash)."""
        self.primary.run("pg_ctl", "stop", "-D", str(self.primary.data), "-m", "immediate")

    def promote(self) -> None:
        """Make the replica a primary that accepts writes; returns once it does."""
        self.replica.run("pg_ctl", "promote", "-w", "-D", str(self.replica.data))
        self.promoted = True
        deadline = time.monotonic() + 30
        with psycopg.connect(self.replica.url(), autocommit=True) as conn:
            while time.monotonic() < deadline:
                row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
                if row and not row[0]:
                    return
                time.sleep(0.05)
        raise RuntimeError("the promoted replica still says it is in recovery")

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self.replica.stop()
        with contextlib.suppress(RuntimeError):
            self.primary.stop()


def _start_replica(primary: Cluster, replica: Cluster) -> None:
    """Copy the primary with ``pg_basebackup -R`` into `replica` and start it as a hot standby."""
    replica.run(
        "pg_basebackup", "-h", "localhost", "-p", str(primary.port), "-U", "postgres",
        "-D", str(replica.data), "-R", "-X", "stream", "--no-sync", "-c", "fast",
    )  # fmt: skip
    # -R wrote primary_conninfo; the name is what the primary's synchronous_standby_names matches.
    with (replica.data / "postgresql.auto.conf").open("a") as conf:
        conf.write(f"primary_conninfo = 'host=localhost port={primary.port} user=postgres "
                   f"application_name={STANDBY_NAME}'\n")  # fmt: skip
    replica.port = free_port()
    options = f"-p {replica.port} -k {replica.data} {replica.settings}"
    replica.run("pg_ctl", "start", "-w", "-D", str(replica.data), "-l", str(replica.root / "server.log"),
                "-o", options)  # fmt: skip


def _wait_streaming(primary: Cluster, *, synchronous: bool, timeout: float = 30.0) -> None:
    wanted = "sync" if synchronous else "async"
    deadline = time.monotonic() + timeout
    with primary.admin() as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT sync_state FROM pg_stat_replication"
                " WHERE application_name = %s AND state = 'streaming'",
                (STANDBY_NAME,),
            ).fetchone()
            if row and row[0] == wanted:
                return
            time.sleep(0.05)
    raise RuntimeError(f"the replica did not start streaming ({wanted}) within {timeout} s")


@contextlib.contextmanager
def replicated_pair(*, synchronous: bool = True) -> Iterator[ReplicatedPair]:
    """A primary and its streaming replica for the block, stopped and removed after it.

    With `synchronous`, every commit waits for the replica (see the module's docstring).
    """
    binaries = find_binaries()
    if binaries is None:
        raise RuntimeError(INSTALL_HINT)
    sync = f" -c synchronous_standby_names={STANDBY_NAME}" if synchronous else ""
    primary = Cluster(binaries, settings=PRIMARY_SETTINGS + sync)
    replica = Cluster(binaries, settings=SETTINGS + " -c hot_standby=on")
    pair = ReplicatedPair(primary, replica)
    try:
        primary.start()
        _start_replica(primary, replica)
        _wait_streaming(primary, synchronous=synchronous)
        yield pair
    finally:
        pair.stop()
