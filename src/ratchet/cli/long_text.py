"""`LongText`: a text of any length in a table cell or a panel, rendered in time linear in its length.

Rich renders a `Text` as one segment holding all its lines, then cuts that
segment into lines one ``str.partition`` at a time, copying what is left each
time: time quadratic in the text's length (`ratchet show` of a task with a
4 MB instruction took 16 s). `LongText` wraps the text as Rich would and
hands each line over on its own.
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.segment import Segment
from rich.text import DEFAULT_JUSTIFY, DEFAULT_OVERFLOW, Text

__all__ = ["LongText"]


class LongText:
    """`text` rendered line by line, as Rich would render it whole (wrapped, or folded, to the width)."""

    def __init__(self, text: Text) -> None:
        self.text = text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        text = self.text  # as `Text.__rich_console__`, but each line its own segments
        tab_size = console.tab_size if text.tab_size is None else text.tab_size
        lines = text.wrap(
            console,
            options.max_width,
            justify=text.justify or options.justify or DEFAULT_JUSTIFY,
            overflow=text.overflow or options.overflow or DEFAULT_OVERFLOW,
            tab_size=tab_size or 8,
            no_wrap=next((flag for flag in (text.no_wrap, options.no_wrap) if flag is not None), False),
        )
        alone = Text("\n")  # joining a line alone gives its own style a span, as joining them all does
        for number, line in enumerate(lines):
            if number:
                yield Segment.line()
            yield from alone.join([line]).render(console)
        if text.end:
            yield Segment(text.end)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.text)
