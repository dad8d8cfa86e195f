"""Stores, chosen by URL: ``memory://``, ``sqlite:///PATH`` (``sqlite:////abs/path``).

``sqlite:`` URLs take one option, ``?durability=normal|full``: ``normal`` (the
default) survives a killed process, ``full`` also survives a power loss at the
cost of a sync per commit (see docs/stores.md).
"""

from __future__ import annotations

from urllib.parse import parse_qs

from ..errors import StoreURLError
from .base import StateStore, StoreOps

__all__ = ["DEFAULT_STORE_URL", "StateStore", "StoreOps", "open_store", "store_from_url"]

DEFAULT_STORE_URL = "sqlite:///./ratchet.db"


def store_from_url(url: str, *, create: bool = True) -> StateStore:
    """Build the store a URL names, not yet opened.

    Args:
        url: ``memory://`` or ``sqlite:///PATH[?durability=normal|full]``.
        create: create the database when it does not exist; when False,
            opening a missing database raises `StoreNotFound`.

    Raises:
        StoreURLError: the URL names no store Ratchet has.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise StoreURLError(
            f"store URL {url!r} has no scheme; use memory://, sqlite:///PATH or postgresql://..."
        )
    if scheme == "memory":
        if rest:
            raise StoreURLError(f"store URL {url!r}: memory:// takes nothing after the scheme")
        from .memory import MemoryStore

        return MemoryStore()
    if scheme == "sqlite":
        from .sqlite import SqliteStore

        path, _, query = rest.partition("?")
        if not path.startswith("/") or len(path) < 2:
            raise StoreURLError(
                f"store URL {url!r} names no file; use sqlite:///relative/path.db "
                "or sqlite:////absolute/path.db"
            )
        options = parse_qs(query, keep_blank_values=True)
        unknown = set(options) - {"durability"}
        if unknown:
            raise StoreURLError(f"store URL {url!r}: unknown option {sorted(unknown)[0]!r}")
        durability = options.get("durability", ["normal"])[-1]
        if durability not in ("normal", "full"):
            raise StoreURLError(
                f"store URL {url!r}: durability must be 'normal' or 'full', not {durability!r}"
            )
        return SqliteStore(path[1:], durability=durability, create=create)
    if scheme in ("postgresql", "postgres"):
        raise StoreURLError("the PostgreSQL store is not available in this version of Ratchet yet")
    raise StoreURLError(
        f"store URL {url!r}: unknown scheme {scheme!r}; use memory://, sqlite:///PATH or postgresql://..."
    )


async def open_store(url: str, *, create: bool = True) -> StateStore:
    """Build and open the store a URL names (see `store_from_url`)."""
    store = store_from_url(url, create=create)
    await store.open()
    return store
