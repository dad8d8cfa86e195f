"""Stores, chosen by URL: ``memory://``, ``sqlite:///PATH`` (``sqlite:////abs/path``),
``postgresql://USER:PASSWORD@HOST:PORT/DATABASE`` (or ``postgres://``).

``sqlite:`` URLs take one option, ``?durability=normal|full``: ``normal`` (the
default) survives a killed process, ``full`` also survives a power loss at the
cost of a sync per commit (see docs/stores.md). ``postgresql:`` URLs are libpq
URLs (any libpq option, such as ``?sslmode=require``, passes through) plus
Ratchet's ``?pool_size=N``: the most connections the store opens at once
(default 10). Both take ``?group_commit=on|off``: whether write transactions
that arrive together share one commit (store/group_commit; on by default
on SQLite with ``durability=full``, off otherwise, see docs/stores.md), and
``?ride_along=on|off``: whether a keyed or safe-to-repeat call's result may
commit with its task's next write (off by default; docs/durability.md,
"Results that ride along"). ``postgresql:`` URLs also take
``?transaction_pooling=on|off`` (whether the URL leads to a transaction
pooler such as PgBouncer; found out as the store opens when not given) and
``?listen_url=URL`` (a direct ``postgresql://`` URL of the same database,
percent-encoded, where the change feeds ``LISTEN`` when the store is behind a
pooler; docs/workers.md, "Behind PgBouncer"), and ``?read_url=URL`` (a
read replica's ``postgresql://`` URL, percent-encoded, where task listings
read: store/base/listings.py; docs/stores.md, "Read replicas").
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote

from ..errors import MissingExtra, StoreURLError
from .base import ReplicaRead, StateStore
from .ops import StoreOps
from .redact import hide_secrets, redact_url, secrets_of

__all__ = [
    "DEFAULT_STORE_URL",
    "ReplicaRead",
    "StateStore",
    "StoreOps",
    "open_store",
    "redact_url",
    "store_from_url",
]

DEFAULT_STORE_URL = "sqlite:///./ratchet.db"
DEFAULT_POOL_SIZE = 10


def store_from_url(url: str, *, create: bool = True, integrity_check: bool = True) -> StateStore:
    """Build the store a URL names, not yet opened.

    Args:
        url: ``memory://``, ``sqlite:///PATH[?durability=normal|full]`` or
            ``postgresql://...[?pool_size=N]``; either of the last two may
            add ``group_commit=off``.
        create: create the database when it does not exist; when False,
            opening a missing database raises `StoreNotFound`.
        integrity_check: check an SQLite file's pages as it opens (``PRAGMA
            quick_check``) and refuse a damaged one with `DamagedDatabase`;
            False opens it anyway. PostgreSQL has no quick equivalent: its
            own page checksums and ``amcheck`` are the operator's tools.

    Raises:
        StoreURLError: the URL names no store Ratchet has.
    """
    shown = redact_url(url)  # how the URL appears in messages: never with a password
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise StoreURLError(
            f"store URL {shown!r} has no scheme; use memory://, sqlite:///PATH or postgresql://..."
        )
    if scheme == "memory":
        if rest:
            raise StoreURLError(f"store URL {shown!r}: memory:// takes nothing after the scheme")
        from .memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite":
        from .sql.sqlite import SqliteStore

        path, _, query = rest.partition("?")
        if not path.startswith("/") or len(path) < 2:
            raise StoreURLError(
                f"store URL {shown!r} names no file; use sqlite:///relative/path.db "
                "or sqlite:////absolute/path.db"
            )
        options = parse_qs(query, keep_blank_values=True)
        unknown = set(options) - {"durability", "group_commit", "ride_along"}
        if unknown:
            raise StoreURLError(f"store URL {shown!r}: unknown option {sorted(unknown)[0]!r}")
        durability = options.get("durability", ["normal"])[-1]
        if durability not in ("normal", "full"):
            raise StoreURLError(
                f"store URL {shown!r}: durability must be 'normal' or 'full', not {durability!r}"
            )
        store = SqliteStore(path[1:], durability=durability, create=create, integrity_check=integrity_check)
        if "group_commit" in options:  # else the store's default: on only with durability=full
            store.share_commits(_group_commit(options["group_commit"][-1], url))
        if "ride_along" in options:
            store.results_ride_along = _on_or_off("ride_along", options["ride_along"][-1], url)
        return store
    if scheme in ("postgresql", "postgres"):
        return _postgres_store(url, create=create)
    raise StoreURLError(
        f"store URL {shown!r}: unknown scheme {scheme!r}; use memory://, sqlite:///PATH or postgresql://..."
    )


def _postgres_store(url: str, *, create: bool) -> StateStore:
    """The PostgreSQL store of `url`, its Ratchet options taken out of the libpq URL."""
    base, _, query = url.partition("?")
    kept, pool_size, group_commit = [], DEFAULT_POOL_SIZE, False  # opt-in there: docs/stores.md
    ride_along = False
    transaction_pooling: bool | None = None  # found out as the store opens
    listen_conninfo: str | None = None
    read_conninfo: str | None = None
    for item in filter(None, query.split("&")):
        key, _, value = item.partition("=")
        if unquote(key) == "read_url":
            read_conninfo = _nested_url("read_url", unquote(value), url)
            continue
        if unquote(key) == "group_commit":
            group_commit = _group_commit(unquote(value), url)
            continue
        if unquote(key) == "ride_along":
            ride_along = _on_or_off("ride_along", unquote(value), url)
            continue
        if unquote(key) == "transaction_pooling":
            transaction_pooling = _on_or_off("transaction_pooling", unquote(value), url)
            continue
        if unquote(key) == "listen_url":
            listen_conninfo = _nested_url("listen_url", unquote(value), url)
            continue
        if unquote(key) != "pool_size":
            kept.append(item)  # left as written: libpq decodes its own options
            continue
        try:
            pool_size = int(unquote(value))
        except ValueError:
            pool_size = 0
        if pool_size < 1:
            raise StoreURLError(
                f"store URL {redact_url(url)!r}: pool_size must be a whole number of at least 1"
            )
    conninfo = base + ("?" + "&".join(kept) if kept else "")
    _check_libpq_url(conninfo, url)
    from .sql.postgresql import PostgresStore

    store = PostgresStore(
        conninfo,
        url=url,
        pool_size=pool_size,
        create=create,
        transaction_pooling=transaction_pooling,
        listen_conninfo=listen_conninfo,
    )
    store.share_commits(group_commit)
    store.results_ride_along = ride_along
    if read_conninfo is not None:
        from .sql.postgresql import Replica, ReplicaStore

        store.replica = Replica(ReplicaStore(read_conninfo, pool_size=pool_size))
    return store


def _check_libpq_url(conninfo: str, url: str, option: str = "") -> None:
    """Refuse `conninfo` (`url`'s, or its `option`'s) in one line if libpq cannot read it."""
    try:
        from psycopg import Error
        from psycopg.conninfo import conninfo_to_dict
    except ImportError as exc:
        raise MissingExtra("a postgresql:// store", "psycopg", "postgres") from exc

    what = f"store URL {redact_url(url)!r}" + (f": {option}" if option else "")
    try:
        params = conninfo_to_dict(conninfo)
    except Error as exc:
        reason = hide_secrets(" ".join(str(exc).split()), secrets_of(url))  # libpq may quote the URL
        raise StoreURLError(f"{what} is not a valid PostgreSQL URL: {reason}") from None
    for port in str(params.get("port") or "").split(","):
        if port and not port.isdigit():
            where = f"{what}'s port" if option else f"{what}: port"
            raise StoreURLError(f"{where} {port!r} is not a number")


def _nested_url(option: str, value: str, url: str) -> str:
    """The connection string of `url`'s `option` (``listen_url``, ``read_url``; given decoded), checked."""
    if not value.startswith(("postgresql://", "postgres://")):
        raise StoreURLError(
            f"store URL {redact_url(url)!r}: {option} must be a percent-encoded postgresql:// URL, "
            f"not {redact_url(value)!r}"
        )
    _check_libpq_url(value, url, option)
    return value


def _group_commit(value: str, url: str) -> bool:
    return _on_or_off("group_commit", value, url)


def _on_or_off(option: str, value: str, url: str) -> bool:
    if value not in ("on", "off"):
        shown = redact_url(url)
        raise StoreURLError(f"store URL {shown!r}: {option} must be 'on' or 'off', not {value!r}")
    return value == "on"


async def open_store(url: str, *, create: bool = True, integrity_check: bool = True) -> StateStore:
    """Build and open the store a URL names (see `store_from_url`)."""
    store = store_from_url(url, create=create, integrity_check=integrity_check)
    await store.open()
    return store
