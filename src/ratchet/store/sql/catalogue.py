"""The SQL of each dialect: named queries, the whole schema, numbered migrations.

Files live beside this module, in ``<dialect>/``: ``queries.sql`` (blocks opened by a line
``-- name: NAME``; a name ``A+B+C`` stands for the blocks A, B and C joined in that order),
``schema.sql`` (the current schema, whole) and ``migrations/NNNN_title.sql`` (applied in
order, each once).

A database's schema version is the highest row of its version table;
`version_problem` says when those rows name none (the dialects read them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from importlib import resources

from ...errors import DamagedDatabase

__all__ = [
    "RATCHET_TABLES",
    "VERSION_TABLE",
    "Migration",
    "Queries",
    "latest_version",
    "migrations",
    "queries",
    "schema",
    "version_problem",
]

VERSION_TABLE = "ratchet_schema_version"
# Tables every schema version has: a database holding them all is Ratchet's,
# whatever became of its version table.
RATCHET_TABLES = frozenset({"tasks", "steps", "operations", "events", "leases"})

_NAME = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)
_MIGRATION = re.compile(r"^(\d{4})_(\w+)\.sql$")


class Queries(dict[str, str]):
    """A dialect's named queries; a name ``A+B+C`` is the blocks A, B and C, joined in order.

    A query made of parts (the task listing's: a select, its leading rows, a
    filter, an order) is composed where it runs, from blocks each written once,
    rather than written out for every combination.
    """

    def __missing__(self, name: str) -> str:
        if "+" not in name:
            raise KeyError(name)
        return "\n".join(self[part] for part in name.split("+"))


@dataclass(frozen=True)
class Migration:
    version: int
    title: str
    sql: str


def _dir(dialect: str) -> resources.abc.Traversable:
    return resources.files("ratchet.store.sql").joinpath(dialect)


@functools.cache
def queries(dialect: str) -> Queries:
    """Return the dialect's named queries, by name.

    A name joining names with ``+`` stands for their blocks, in order (`Queries`):
    a condition several queries share is a block of its own, written once.
    """
    text = _dir(dialect).joinpath("queries.sql").read_text(encoding="utf-8")
    parts = _NAME.split(text)
    named: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in named:
            raise ValueError(f"query {name!r} is defined twice in {dialect}/queries.sql")
        named[name] = body.strip()
    return Queries(named)


@functools.cache
def schema(dialect: str) -> str:
    """Return the dialect's current schema as one SQL script."""
    return _dir(dialect).joinpath("schema.sql").read_text(encoding="utf-8")


@functools.cache
def migrations(dialect: str) -> tuple[Migration, ...]:
    """Return the dialect's migrations, by version; versions run 1, 2, 3 ... with no gap."""
    found = []
    for entry in _dir(dialect).joinpath("migrations").iterdir():
        match = _MIGRATION.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise ValueError(f"{dialect} migrations are not numbered 1, 2, 3 ... without gaps")
    return tuple(found)


def latest_version(dialect: str) -> int:
    """Return the schema version a fresh database of the dialect gets."""
    return len(migrations(dialect))


def version_problem(versions: Sequence[object], tables: Collection[str]) -> str | None:
    """What keeps `versions`, the rows of the version table, from naming the schema's version.

    None when they name it, or when the version table is all the database
    holds (a schema about to be made).
    """
    if not versions:
        return None if set(tables) <= {VERSION_TABLE} else f"its {VERSION_TABLE} table is empty"
    for version in versions:
        if type(version) is not int or version < 1:
            shown = ascii(version)  # it came from the database: no control characters in a message
            shown = shown if len(shown) <= 40 else shown[:39] + "…"
            return f"its {VERSION_TABLE} table holds {shown}, not a version number"
    return None


def no_readable_version(database: str, why: str) -> DamagedDatabase:
    """The error for `database` (how messages name it) with Ratchet's tables but no version to trust."""
    return DamagedDatabase(
        f"{database} has Ratchet tables but no readable schema version ({why}); "
        "Ratchet leaves it untouched: restore it from a backup, or repair its version table"
    )
