"""`ratchet run` prints the model's text as the task's stream brings it; ``--json`` stays one line.

A tool of the run (`speak`) writes its entry to the task's stream a few
characters at a time, as a streamed model call does, through the store's
own ``append_stream``: the run's printing is what is tested, whoever writes.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from rich.console import Console

from ratchet.cli.progress import run_panel
from ratchet.cli.stream_text import Answer

from ..helpers.cli import ratchet_command, ratchet_env
from ..helpers.stream_entries import attempt, end, text
from .run_support import TOOLS, acts, script
from .test_cli_run_display import progress

SPEAKING_TOOLS = (
    TOOLS
    + '''
import os

from ratchet.records import StreamEntry, StreamKind
from ratchet.store import open_store


@ratchet.tool
async def speak(entry: str, ctx: ratchet.ToolContext) -> str:
    """Say `entry` on the task's stream, four characters at a time."""
    store = await open_store(os.environ["SPEAK_STORE"])

    def put(kind, **fields):
        return [StreamEntry(task_id=ctx.task_id, kind=kind, seq=ctx.seq, attempt=1, **fields)]

    try:
        await store.append_stream(ctx.task_id, put(StreamKind.ATTEMPT))
        for start in range(0, len(entry), 4):
            await store.append_stream(ctx.task_id, put(StreamKind.TEXT, value=entry[start : start + 4]))
            await asyncio.sleep(0.03)
        await store.append_stream(ctx.task_id, put(StreamKind.END, value={"outcome": "succeeded"}))
    finally:
        await store.close()
    return f"said {entry}"
'''
)
PROGRESS = re.compile(r" +(\d+ +)?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")
FIRST = "Hello, streaming world!"
SECOND = "A second answer."


def _run(tmp_path: Path, url: str, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "tools.py").write_text(SPEAKING_TOOLS)
    model = script(tmp_path, act=[*acts(FIRST, tool="speak"), *acts(SECOND, tool="speak")])
    return subprocess.run(
        ratchet_command("run", "say it", "-m", model, "--tools", "tools.py", "--store", url, *options),
        cwd=tmp_path,
        env=ratchet_env(SPEAK_STORE=url),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_run_prints_the_text_of_its_stream_as_it_comes_between_its_progress_lines(
    tmp_path: Path, url: str
) -> None:
    done = _run(tmp_path, url)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("task ") and "created; it runs here" in lines[0]
    # The progress lines (events, tool calls) are indented; the text is not, and no piece is lost
    # or doubled, however the progress lines fell between its pieces. The engine streams the
    # model's own answers too (its reports after each tool call), each a call of its own.
    # A piece may begin with a space (" wor"), so a progress line is told by its time, not its indent.
    said = "".join(line for line in lines[1:] if not PROGRESS.match(line) and not line.startswith("task "))
    assert said.startswith(f"{FIRST}recorded {FIRST}{SECOND}recorded {SECOND}")
    assert any(line.endswith("speak(entry='Hello, streaming world!'): ok") for line in lines)


def test_run_json_prints_only_its_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, f"sqlite:///{tmp_path / 'ratchet.db'}", "--json")

    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    assert json.loads(line)["status"] == "completed"
    assert FIRST not in done.stderr


def test_the_panel_shows_the_end_of_the_answer_being_written_and_a_new_attempt_apart() -> None:
    answer = Answer()
    for entry in [attempt("t", 1), text("t", 1, "line one\nline two\nhalf of thr")]:
        answer.take(entry)
    console = Console(width=120, record=True, color_system=None)
    console.print(run_panel(progress(), answer))
    first = console.export_text()

    for entry in [attempt("t", 2), text("t", 2, "again")]:
        answer.take(entry)
    console.print(run_panel(progress(), answer))
    second = console.export_text()
    answer.take(end("t", 2, outcome="failed"))

    assert "model call #3" in first and "line one" in first and "half of thr" in first
    assert "model call #3 (attempt 2; attempt 1 did not finish)" in second
    assert "again" in second and "line one" not in second
    assert answer.note == "attempt 2 failed"


def test_the_panel_shows_an_attempt_made_again_after_a_kill_apart_from_the_cut_one() -> None:
    answer = Answer()
    for entry in [attempt("t", 1, value={}), text("t", 1, "Once upon")]:
        answer.take(entry)
    answer.take(end("t", 1, "interrupted", cut_at=1))
    assert answer.note == "attempt 1 was cut off"

    for entry in [attempt("t", 1, value={"restarted": True, "cut_at": 1}), text("t", 1, "Once upon a time.")]:
        answer.take(entry)
    console = Console(width=120, record=True, color_system=None)
    console.print(run_panel(progress(), answer))
    shown = console.export_text()

    assert answer.text == "Once upon a time."  # never "Once uponOnce upon a time."
    assert "attempt 1 again; the cut-off run's text is not part of the answer" in shown
    answer.take(end("t", 1, "interrupted"))
    assert answer.note == "attempt 1 was stopped"
