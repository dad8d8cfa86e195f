"""`ratchet show` of a task whose instruction (result, error) is megabytes long: linear, not quadratic.

Rich cuts the segments a table cell renders into lines, one ``str.partition``
at a time, copying what is left of a segment each time: a segment holding n
lines costs n copies of it, quadratic in its length (a 4 MB instruction took
16 s; 8 MB, a minute). The test asserts the property that keeps it linear:
Rich is never handed a segment holding more than one line. No clock is read.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ratchet.cli import render
from ratchet.printable import plain
from ratchet.records import TaskStatus
from ratchet.store import open_store
from ratchet.views.task import TaskView, load_task_view

from ..helpers.builders import make_task

LONG = ("Check the staging service, then every replica, and restart what is down.\n" * 200) + "x" * 5000


class _Watching(Console):
    """A console that notes the most lines Rich was handed in one segment to cut into lines."""

    most_lines = 0

    def render_lines(self, renderable: RenderableType, options: Any = None, **rest: Any) -> Any:
        for segment in self.render(renderable, options or self.options):
            if not segment.control:
                self.most_lines = max(self.most_lines, segment.text.count("\n"))
        return super().render_lines(renderable, options, **rest)


def _view(tmp_path: Path) -> TaskView:
    async def load() -> TaskView:
        store = await open_store(f"sqlite:///{tmp_path / 'ratchet.db'}")
        try:
            task = make_task("t1", instruction=LONG, goal=LONG, status=TaskStatus.FAILED, error=LONG)
            await store.create_task(task.model_copy(update={"result": LONG}))
            async with store.reading() as tx:
                return await load_task_view(tx, "t1")
        finally:
            await store.close()

    return asyncio.run(load())


def test_show_hands_rich_a_long_instruction_one_line_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = _view(tmp_path)
    watching = _Watching(file=io.StringIO(), width=100, highlight=False)
    monkeypatch.setattr(render, "console", watching)

    render.print_task_view(view, store_url="sqlite:///ratchet.db")

    shown = watching.file.getvalue()  # type: ignore[attr-defined]
    assert shown.count("restart what is down") == 4 * 200  # instruction, goal, result, error: whole
    assert watching.most_lines <= 1


SAMPLES = [
    plain("short"),
    plain("word " * 300 + "\n\nnext\tparagraph  " + "y" * 500),
    plain("é中文🙂" * 200 + "\n" * 3),
    plain(""),
    plain("ends with a line break\n"),
    plain("\x1b[2J escaped \u202e " * 20, style="red"),
    Text.assemble(plain("bold part ", style="bold"), plain("then plain " * 40)),
]


@pytest.mark.parametrize("width", [20, 60, 100])
@pytest.mark.parametrize("sample", range(len(SAMPLES)))
def test_a_long_text_looks_as_the_text_itself_does(sample: int, width: int) -> None:
    from ratchet.cli.long_text import LongText  # here: the test above runs where it is not

    def shown(cell: RenderableType) -> str:
        fields = Table.grid(padding=(0, 2))
        fields.add_column(style="bold", no_wrap=True)
        fields.add_column(overflow="fold")
        fields.add_row("instruction", cell)
        console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system="truecolor")
        console.print(Panel(fields, title="t1"))
        return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]

    text = SAMPLES[sample]

    assert shown(LongText(text)) == shown(text)
