"""Behind a transaction pooler (PgBouncer's ``pool_mode = transaction``): finding out, and what changes.

A pooler in transaction mode runs each transaction of a client connection on
whichever server connection is free, so nothing of a session outlives its
transaction. The store relies on none: every statement of a store operation
runs inside its ``BEGIN`` .. ``COMMIT`` (pipelines and strings of statements
included), its advisory locks are transaction-level, and it sets nothing per
session. Two things of psycopg's and PostgreSQL's are per session, though:

- prepared statements: psycopg prepares a statement it has run five times
  on a connection, and the next transaction may run on a server connection
  that never saw it (or saw another client's of the same name). Behind a
  pooler the store's connections prepare nothing (``prepare_threshold=None``);
- ``LISTEN``: a notification goes to the server connection that listened,
  which the pooler has long handed to someone else. Behind a pooler the
  change feeds poll (`POOLED_POLL`), said once in the log, unless the URL's
  ``?listen_url=`` names a direct connection to listen on.

Whether connections are pooled is found out as the store opens
(`pooled_per_transaction`), unless the URL says it (``?transaction_pooling=``).
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool

from .. import catalogue
from .schema import DIALECT, Target, connection_error

__all__ = ["POOLED_POLL", "pooled_per_transaction", "say_polling"]

POOLED_POLL = 0.5  # seconds between a change feed's looks when it cannot listen: a worker's --poll default
_ROUNDS = 2  # of one transaction on each connection; the first usually tells

log = logging.getLogger(__name__)


async def pooled_per_transaction(
    conn: psycopg.AsyncConnection[Any], pool: AsyncConnectionPool, target: Target
) -> bool:
    """Whether `conn` and a connection of `pool` (to `target`) run their transactions on shared servers.

    Raises:
        StoreError: the connections failed.
    """
    try:
        async with pool.connection() as second:
            pooled = await _sharing(conn, second)
            if pooled:  # it ran too few statements to have prepared one: from now on, none
                second.prepare_threshold = None
            return pooled
    except psycopg.Error as exc:
        raise connection_error(target, exc) from None


async def _sharing(first: psycopg.AsyncConnection[Any], second: psycopg.AsyncConnection[Any]) -> bool:
    """Whether two connections open at once run their transactions on shared server processes.

    A direct connection (or one through a pooler in session mode) keeps one
    server process for its life, and no other connection has it. Behind a
    transaction pooler, a transaction runs on whichever server connection is
    free: as a rule the one that has just finished another client's
    transaction (PgBouncer hands out the last one freed). So the connections
    are pooled if either one's process changes between its transactions, or
    both ran on one process. Each statement here is a transaction of its own
    (autocommit); a direct connection is never taken for a pooled one.
    """
    seen: list[set[int]] = [set(), set()]
    for _ in range(_ROUNDS):
        for mine, conn in zip(seen, (first, second), strict=True):
            cursor = await conn.execute(catalogue.queries(DIALECT)["backend_pid"])
            row = await cursor.fetchone()
            assert row is not None
            mine.add(int(row[0]))
        if len(seen[0]) > 1 or len(seen[1]) > 1 or seen[0] & seen[1]:
            return True
    return False


def say_polling(target: Target) -> None:
    """Log, in one line, that the change feeds poll because the store is behind a transaction pooler."""
    log.warning(
        "PostgreSQL %s is behind a transaction pooler (such as PgBouncer in transaction mode), where "
        "LISTEN/NOTIFY does not work: workers and change feeds look for news every %g s; to have them "
        "woken at once, add ?listen_url=<a direct postgresql:// URL of the database, percent-encoded> "
        "to the store URL",
        target,
        POOLED_POLL,
    )
