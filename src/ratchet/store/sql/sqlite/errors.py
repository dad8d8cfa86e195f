"""SQLite's errors as store errors: the one place they are translated, and why a file is read-only.

SQLite reports what went wrong in a result code; Ratchet's callers need to
know whether to give up (a broken rule, a file that is not a database) or to
wait and try again once a person fixed the store (a full disk, a read-only
file system, an I/O error, a lock held too long): `StoreUnavailable` and
its subclasses `StoreFull` and `StoreReadOnly` say the latter.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from ....errors import DuplicateRecord, StoreError, StoreFull, StoreReadOnly, StoreUnavailable

__all__ = ["primary_code", "read_only_error", "read_only_reason", "store_error"]

# Errors after which the same work may succeed once the store is fixed (or the lock is free).
_UNAVAILABLE = {sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}


def primary_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of `exc` (``SQLITE_READONLY`` for ``SQLITE_READONLY_DBMOVED``), or 0."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    """The store error for an SQLite error met on the database at `path`."""
    code = primary_code(exc)
    if code == sqlite3.SQLITE_CONSTRAINT and "UNIQUE" in str(exc):
        return DuplicateRecord(f"SQLite {path}: {exc}")
    if code == sqlite3.SQLITE_FULL:
        return StoreFull(
            f"the database at {path} is full, or the disk it is on is (SQLite: {exc}); "
            "free space there, then try again"
        )
    if code == sqlite3.SQLITE_READONLY:
        return read_only_error(path, read_only_reason(path) or f"SQLite: {exc}")
    if code in _UNAVAILABLE:
        return StoreUnavailable(f"SQLite cannot use the database at {path} now: {exc}")
    return StoreError(f"SQLite error on {path}: {exc}")


def read_only_error(path: Path, reason: str) -> StoreReadOnly:
    """The error a write to the read-only database at `path` meets."""
    return StoreReadOnly(
        f"the database at {path} is read-only ({reason}); commands that only read it work, "
        "make it writable to run this one"
    )


def read_only_reason(path: Path) -> str | None:
    """Why the database at `path` cannot be written (None if nothing says it cannot).

    SQLite writes beside the file too (its ``-wal`` and ``-shm`` files), so a
    directory that is not writable makes the database read-only as well.
    """
    directory = path.parent
    try:
        if os.statvfs(directory).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        return None
    if path.exists() and not os.access(path, os.W_OK):
        return "the file is not writable"
    if not os.access(directory, os.W_OK):
        return f"its directory {directory} is not writable"
    return None
