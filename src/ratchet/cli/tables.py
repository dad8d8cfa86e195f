"""The CLI's tables: every word whole on an 80-column terminal, each id whole on any terminal.

Rich, handed a table wider than the terminal, narrows its columns and folds
whatever no longer fits in one: six columns at 80 columns made ``complet`` /
``ed`` of a task's status. A `Listing` is drawn lighter (columns two spaces
apart, a rule under the header: borders took a third of 80 columns), and each
of its columns says how it gives way. Before it is printed, the columns that
must are narrowed, in this order and only as far as the terminal demands:

1. a preview (of a call's input or output, cut already) is cut further,
   ending in ``…``;
2. text (a name, an instruction) wraps between its words, down to its
   longest word;
3. words that may be cut (an agent, a time) and previews, the widest column
   first, are cut, down to a few characters;
4. text narrower than its longest words: those words fold, down to a few
   characters;
5. then, as a last resort, the words that may be cut, the text, and last the
   words kept whole (a status).

An id never narrows: cut or folded, it could not be pasted into the next
command. A table whose ids are wider than the terminal is printed whole, past
its edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from rich import box
from rich.console import Console, JustifyMethod, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from .long_text import LongText

__all__ = ["Listing"]

# The columns of a `Listing` are this far apart: a space for the border, one of padding.
_BETWEEN_COLUMNS = 2

# A word cut, or a text folded, before the last resort keeps at least this many characters.
_KEPT = 8

# A preview is cut this far before anything else gives way.
_PREVIEW_KEPT = 20


class _Gives(Enum):
    ID = "never"
    PREVIEW = "is cut first"
    TEXT = "wraps"
    WORD = "is cut"
    WHOLE = "is cut last"


class Listing:
    """A table of records, one a row, that fits the terminal without folding a word (see the module).

    Args:
        title: a line above the table.
    """

    def __init__(self, title: str | None = None) -> None:
        self.table = Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
        )
        self._gives: list[_Gives] = []  # each column's

    def id_column(self, header: str) -> None:
        """A column of ids (of tasks, schedules, sessions, calls): each whole, on one line, always."""
        self.table.add_column(header, no_wrap=True)
        self._gives.append(_Gives.ID)

    def text_column(self, header: str) -> None:
        """A column of text: it wraps between words, and is the first to give way."""
        self.table.add_column(header, overflow="fold")
        self._gives.append(_Gives.TEXT)

    def word_column(self, header: str, *, whole: bool = False, justify: JustifyMethod = "left") -> None:
        """A column of single words (a time, an agent), never wrapped; cut with ``…`` if it must give way.

        Args:
            whole: cut only after everything else gave way (a status).
            justify: where a cell sits in the column (numbers to the right).
        """
        self.table.add_column(header, no_wrap=True, overflow="ellipsis", justify=justify)
        self._gives.append(_Gives.WHOLE if whole else _Gives.WORD)

    def preview_column(self, header: str) -> None:
        """A column of previews (cut already, ending in ``…``): one line each, the first cut further."""
        self.table.add_column(header, no_wrap=True, overflow="ellipsis")
        self._gives.append(_Gives.PREVIEW)

    def add_row(self, *cells: RenderableType) -> None:
        self.table.add_row(*cells)

    def print(self, console: Console) -> None:
        """Print the table, its columns narrowed to fit `console`'s width as the module says."""
        self._fit(console)
        console.print(self.table, crop=False)  # an id wider than the terminal stays whole

    def _fit(self, console: Console) -> None:
        columns = [[column.header, *column.cells] for column in self.table.columns]
        natural = [
            max(Measurement.get(console, console.options, cell).maximum for cell in cells)
            for cells in columns
        ]
        widths = list(natural)
        excess = sum(widths) + _BETWEEN_COLUMNS * (len(widths) - 1) - console.width
        previews, text, whole = (self._all(kind) for kind in (_Gives.PREVIEW, _Gives.TEXT, _Gives.WHOLE))
        words = self._all(_Gives.WORD) + previews
        stages = (
            (previews, dict.fromkeys(previews, _PREVIEW_KEPT)),
            (text, {i: max(map(_longest_word, columns[i])) for i in text}),
            (words, dict.fromkeys(words, _KEPT)),
            (text, dict.fromkeys(text, _KEPT)),
            (words, dict.fromkeys(words, 1)),
            (text, dict.fromkeys(text, 1)),
            (whole, dict.fromkeys(whole, 1)),
        )
        for narrowed, floors in stages:
            excess = _narrow(widths, narrowed, {i: min(floors[i], widths[i]) for i in narrowed}, excess)
        for column, gives, width, wanted in zip(
            self.table.columns, self._gives, widths, natural, strict=True
        ):
            if gives is _Gives.ID:
                column.min_width = width  # never narrower than its longest id, whatever Rich would do
            elif width < wanted:
                column.max_width = width

    def _all(self, kind: _Gives) -> list[int]:
        return [index for index, gives in enumerate(self._gives) if gives is kind]


def _narrow(widths: list[int], columns: Sequence[int], floors: dict[int, int], excess: int) -> int:
    """Take up to `excess` from `columns`, the widest first (equally, when tied), none below its floor.

    Returns what is still in excess.
    """
    while excess > 0:
        shrinkable = [i for i in columns if widths[i] > floors[i]]
        if not shrinkable:
            break
        top = max(widths[i] for i in shrinkable)
        tied = [i for i in shrinkable if widths[i] == top]
        below = max([floors[i] for i in tied] + [widths[i] for i in shrinkable if widths[i] < top])
        step = min(top - below, -(-excess // len(tied)))
        for i in reversed(tied):  # the rightmost first: the leftmost columns say the most
            cut = min(step, excess)
            widths[i] -= cut
            excess -= cut
    return excess


def _longest_word(cell: RenderableType) -> int:
    text = cell.text if isinstance(cell, LongText) else cell
    words: Iterable[str] = (text.plain if isinstance(text, Text) else str(text)).split()
    return max(map(len, words), default=0)
