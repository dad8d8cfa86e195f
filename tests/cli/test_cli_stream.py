"""`ratchet stream`: a task's stream printed as it is written, through real `ratchet` processes.

The test writes the stream through the store (as the engine does while a
worker runs the task) while the command follows it, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
import io
import json
import signal
import subprocess
from pathlib import Path

from ratchet.cli.stream_text import StreamText
from ratchet.records import StreamEntry
from ratchet.store import open_store

from ..helpers.cli import LineReader, RunRatchet, assert_one_line_error, ratchet_command, ratchet_env
from ..helpers.stream_entries import (
    attempt,
    end,
    finish_task,
    new_task,
    start_task,
    stopped,
    story,
    text,
    value,
)
from .task_support import SIGNAL_TIMEOUT

STORY_SHOWN = (
    "The answer is 4\n"
    "--- model call #3, attempt 1 was cut off ---\n"
    "--- model call #3, attempt 1 begins again "
    "(attempt 1 was cut off: what it wrote is not part of this answer) ---\n"
    "The answer is 42.\n"
    'progress: {"done": 1, "of": 2}\n'
    'note: "ünïcode \\u2028 and a quote \\""\n'
    "Second call.\n"
)


def _write(
    url: str, *batches: list[StreamEntry], finish: str | None = None, create: str | None = None
) -> None:
    """Open the store, make the task (`create`), append each batch, end the task (`finish`), close."""

    async def write() -> None:
        store = await open_store(url)
        try:
            if create is not None:
                await new_task(store, create)
                await start_task(store, create)
            for batch in batches:
                await store.append_stream(batch[0].task_id, batch)
            if finish is not None:
                await finish_task(store, finish)
        finally:
            await store.close()

    asyncio.run(write())


def _follow(tmp_path: Path, url: str, *args: str) -> tuple[subprocess.Popen[str], LineReader]:
    process = subprocess.Popen(
        ratchet_command("stream", *args, "--store", url),
        cwd=tmp_path,
        env=ratchet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, LineReader(process.stdout)  # type: ignore[arg-type]


def _ended(process: subprocess.Popen[str], reader: LineReader) -> tuple[int, str, str]:
    code = process.wait(SIGNAL_TIMEOUT)
    assert process.stderr is not None
    err = process.stderr.read()
    process.stderr.close()
    return code, "".join(reader.rest(SIGNAL_TIMEOUT)), err


def test_it_prints_the_text_as_written_each_attempt_apart_and_exits_when_the_task_ends(
    tmp_path: Path, url: str
) -> None:
    [*batches] = story("t-stream")
    _write(url, batches[0], batches[1], create="t-stream")
    process, reader = _follow(tmp_path, url, "t-stream")
    # The cut attempt's text is out (its line ended by the mark) before the rest is written.
    _write(url, batches[2])
    reader.wait_for("--- model call #3, attempt 1 begins again", SIGNAL_TIMEOUT)
    _write(url, *batches[3:6])
    reader.wait_for("progress: ", SIGNAL_TIMEOUT)
    assert process.poll() is None  # still following: the task runs
    _write(url, *batches[6:], finish="t-stream")

    code, out, err = _ended(process, reader)

    assert (code, err) == (0, "")
    assert out == STORY_SHOWN


def test_a_stopped_attempt_made_again_then_failed_and_retried_reads_as_three_attempts_apart(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    _write(url, *stopped("t-stream"), create="t-stream", finish="t-stream")

    done = run_ratchet("stream", "t-stream", "--no-follow", "--store", url)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "Half an ans\n"
        "--- model call #3, attempt 1 was stopped ---\n"
        "--- model call #3, attempt 1 begins again "
        "(attempt 1 was stopped: what it wrote is not part of this answer) ---\n"
        "An ans\n"
        "--- 1 stream entry lost here (the store refused them) ---\n"
        "--- model call #3, attempt 1 failed: ModelUnavailable ---\n"
        "--- model call #3, attempt 2 begins "
        "(attempt 1 failed: what it wrote is not part of this answer) ---\n"
        "The answer.\n"
    )


def test_a_restarted_attempt_is_set_apart_also_when_the_reader_starts_after_the_cut_one(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    _write(url, *story("t-stream"), create="t-stream", finish="t-stream")

    done = run_ratchet("stream", "t-stream", "--no-follow", "--from", "4", "--store", url)

    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(
        "--- model call #3, attempt 1 begins again "
        "(attempt 1 was cut off: what it wrote is not part of this answer) ---\n"
        "The answer is 42.\n"
    )


def test_json_lines_carry_offsets_and_a_reader_going_on_from_one_misses_nothing_and_repeats_nothing(
    run_ratchet: RunRatchet, url: str
) -> None:
    batches = story("t-stream")
    _write(url, *batches[:3], create="t-stream")
    first = run_ratchet("stream", "t-stream", "--json", "--no-follow", "--store", url)
    assert first.returncode == 0, first.stderr
    seen = [json.loads(line) for line in first.stdout.splitlines()]
    _write(url, *batches[3:], finish="t-stream")

    going_on = run_ratchet(
        "stream", "t-stream", "--json", "--from", str(seen[-1]["offset"] + 1), "--store", url
    )

    assert going_on.returncode == 0, going_on.stderr
    seen += [json.loads(line) for line in going_on.stdout.splitlines()]
    assert [entry["offset"] for entry in seen] == list(range(14))
    every = [entry for batch in batches for entry in batch]
    assert [(e["kind"], e["seq"], e["attempt"], e["key"], e["value"]) for e in seen] == [
        (str(e.kind), e.seq, e.attempt, e.key, e.value) for e in every
    ]
    assert set(seen[0]) == {"task_id", "offset", "kind", "seq", "attempt", "key", "value", "written_at"}
    assert seen[0]["task_id"] == "t-stream" and seen[0]["written_at"].endswith("+00:00")


def test_no_follow_prints_what_is_stored_of_a_running_task_and_exits(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    _write(url, [attempt("t-stream", 1), text("t-stream", 1, "half an ans")], create="t-stream")

    done = run_ratchet("stream", "t-stream", "--no-follow", "--store", url)
    later = run_ratchet("stream", "t-stream", "--no-follow", "--from", "1", "--store", url)

    assert (done.returncode, done.stdout, done.stderr) == (0, "half an ans\n", "")
    assert later.stdout == "half an ans\n"


def test_no_task_and_a_bad_offset_are_one_line_each_and_exit_2(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    _write(url, create="t-stream")

    assert_one_line_error(run_ratchet("stream", "nobody", "--store", url), "no task with id 'nobody'")
    assert_one_line_error(
        run_ratchet("stream", "nobody", "--store", f"sqlite:///{tmp_path / 'none.db'}"), "nobody"
    )
    assert_one_line_error(run_ratchet("stream", "t-stream", "--from", "-1", "--store", url), "--from")
    assert_one_line_error(run_ratchet("stream", "t-stream", "--from", "ten", "--store", url), "--from")
    assert not (tmp_path / "none.db").exists()  # looking never creates a database


def test_ctrl_c_ends_following_quietly_with_130(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    _write(url, [attempt("t-stream", 1), text("t-stream", 1, "never finished")], create="t-stream")
    _write(url, [end("t-stream", 1, outcome="failed")])
    process, reader = _follow(tmp_path, url, "t-stream")
    reader.wait_for("attempt 1 failed", SIGNAL_TIMEOUT)

    process.send_signal(signal.SIGINT)
    code, out, err = _ended(process, reader)

    assert (code, err) == (130, "")
    assert out == "never finished\n--- model call #3, attempt 1 failed ---\n"


def test_an_attempt_is_set_apart_also_when_the_reader_did_not_see_the_one_before() -> None:
    shown = io.StringIO()
    lines = StreamText(shown)
    for entry in [attempt("t", 2), text("t", 2, "again"), end("t", 2, outcome="failed"), attempt("t", 3)]:
        lines.show(entry)
    lines.show(text("t", 3, "fine"))
    lines.end_line()

    assert shown.getvalue() == (
        "--- model call #3, attempt 2 begins "
        "(attempt 1 did not finish: what it wrote is not part of this answer) ---\n"
        "again\n"
        "--- model call #3, attempt 2 failed ---\n"
        "--- model call #3, attempt 3 begins "
        "(attempt 2 failed: what it wrote is not part of this answer) ---\n"
        "fine\n"
    )


def test_only_the_engine_s_marks_say_entries_were_lost_not_a_workflow_s_value() -> None:
    shown = io.StringIO()
    lines = StreamText(shown)
    for entry in [
        attempt("t", 1, value={"dropped": 2}),
        text("t", 1, "fine"),
        end("t", 1, dropped=1),
        value("t", "counts", {"dropped": 3}),
    ]:
        lines.show(entry)

    assert shown.getvalue() == (
        "--- 2 stream entries lost here (the store refused them) ---\n"
        "fine\n"
        "--- 1 stream entry lost here (the store refused them) ---\n"
        'counts: {"dropped": 3}\n'
    )
