"""The PostgreSQL store (``postgresql://``): its Python beside its SQL.

store.py: the store (a pool); driver.py: one connection's transaction, its
statements sent in one round trip; schema.py: connecting, the server's
errors, getting a database ready (migrations); changes.py: the change feed
over LISTEN/NOTIFY; pooling.py: behind a transaction pooler (PgBouncer);
failover.py: noticing the database moved to another server; history.py: the
journal and events of ended tasks in partitions by day; replica.py: the
read replica task listings may read (``?read_url=``); queries.sql,
schema.sql and migrations/: the dialect's SQL.
"""

from .replica import Replica, ReplicaStore
from .store import PostgresStore

__all__ = ["PostgresStore", "Replica", "ReplicaStore"]
