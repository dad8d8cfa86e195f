"""`UndoLog`: tables kept as dicts whose every change a transaction can play back.

The memory store's tables are plain dicts; each write goes through `_set` or
`_delete`, which note the old value first, so a transaction that fails is
rolled back by undoing its writes newest first.
"""

from __future__ import annotations

from typing import Any

__all__ = ["UndoLog"]

_MISSING = object()


class UndoLog:
    """Writes to dict tables, each noted so `roll_back` can undo it."""

    def __init__(self) -> None:
        self.undo: list[tuple[dict[Any, Any], Any, Any]] = []

    def _set(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        self.undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def _delete(self, table: dict[Any, Any], key: Any) -> None:
        if key in table:
            self.undo.append((table, key, table[key]))
            del table[key]

    def _rows(self, table: dict[str, dict[int, str]], key: str) -> dict[int, str]:
        if key not in table:
            self._set(table, key, {})
        return table[key]

    def roll_back(self) -> None:
        """Undo the writes noted since the log was last cleared, newest first."""
        for table, key, old in reversed(self.undo):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old
