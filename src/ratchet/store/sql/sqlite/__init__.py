"""The SQLite store (``sqlite:///PATH``): its Python beside its SQL.

store.py: the store and its driver (one connection); errors.py: SQLite's
errors as store errors; schema.py: getting a file ready (checks, pragmas,
migrations); queries.sql, schema.sql and migrations/: the dialect's SQL.
"""

from .store import SqliteStore

__all__ = ["SqliteStore"]
