"""Changing workflow code while tasks are in flight: ``ctx.patched("patch-id")``.

A resumed task runs its workflow again from the top and replays its
journal, so new code must ask for the very calls the old code recorded.
``patched`` lets one workflow serve both: new code goes under
``if await ctx.patched("id"):``, the old code in the ``else``.

- On a live run it records a marker operation (kind ``patch``, name
  ``patched:<id>``) at its seq and returns True.
- On replay, a marker of that id at its seq returns True (the seq is
  consumed, as on the live run). Anything else recorded there (another
  call, or another patch's marker) means the journal was written by code
  without this patch: it returns False and takes no seq, so the old path's
  calls meet their recorded seqs. A position with nothing recorded before
  the journal's last entry (an unfinished batch of parallel calls) counts as
  old code too.
- The first time the run reaches a seq the journal does not hold, it is
  live from there: the new path runs, whatever code wrote the journal before.

A marker the code no longer asks for (the ``patched`` call removed once no
task runs the old path) is stepped over by the next call, so tasks that
recorded it still replay. See docs/durability.md, "Changing workflow code".
"""

from __future__ import annotations

from typing import Protocol

from pydantic import JsonValue

from ...errors import InputError
from ...records import OpKind
from .task_journal import Journal
from .values import JournalHost, record_value

__all__ = ["PATCH_PREFIX", "Versioning", "skip_unasked_markers"]

PATCH_PREFIX = "patched:"


class _Host(JournalHost, Protocol):
    journal: Journal
    _next_seq: int

    def _take_seq(self, count: int = 1) -> int: ...


def skip_unasked_markers(journal: Journal, seq: int) -> int:
    """The first seq from `seq` that holds no patch marker (markers no ``patched`` call asked for)."""
    while (op := journal.lookup(seq)) is not None and op.kind is OpKind.PATCH:
        seq += 1
    return seq


class Versioning:
    """``ctx.patched(id)``: part of `Context`."""

    async def patched(self: _Host, patch_id: str) -> bool:
        """Whether this run takes the new code of patch `patch_id` (see the module's docstring).

        Args:
            patch_id: a name for the change, unique in the workflow and never reused.

        Returns:
            True on a live run and on the replay of a run that recorded it;
            False on the replay of a journal written before the patch existed.
        """
        if not patch_id or not isinstance(patch_id, str):
            raise InputError("ctx.patched needs a patch id: a non-empty string, e.g. 'fix-refund-amount'")
        name = PATCH_PREFIX + patch_id
        seq = self._next_seq
        # Markers recorded here in a row: this patch's, maybe after some no call asks for any more.
        end = skip_unasked_markers(self.journal, seq)
        for at in range(seq, end):
            if self.journal.recorded[at].name == name:
                self._next_seq = at + 1
                return True
        if end > seq or seq <= self.journal.last_recorded_seq:
            return False  # old code's journal: its own call (or none, in a gap) stays at this seq
        self._next_seq = seq + 1
        made: JsonValue = await record_value(self, seq, OpKind.PATCH, name, lambda: True)
        return bool(made)
