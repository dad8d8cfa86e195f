"""What a model, a tool or a person wrote is shown as written: never as markup, never as terminal codes.

Every command that prints such text is fed Rich markup (``[bold]``, ``[/a]``,
``[link=...]``, ``[bcc x]``) and escape sequences (clear screen, window
title, OSC-8 hyperlink, CR, CSI as a C1 control); its output, read as bytes,
must hold no raw control character and show each piece as written, and the
arguments of a call waiting for approval must show exactly, byte for byte.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TypedDict

import pytest
from pydantic import JsonValue

from ratchet.printable import plain, printable, printable_json

from ..helpers.cli import ratchet_command, ratchet_env
from .hostile import (
    ARGUMENTS,
    ARGUMENTS_JSON,
    CLEAR_SCREEN,
    ESCAPES,
    EVIL,
    HYPERLINK,
    LONG_VALUE,
    MARKUP,
    WINDOW_TITLE,
    HostileTasks,
    assert_plain,
    assert_shown_as_written,
    hostile_store,
    run_bytes,
)
from .run_support import read_terminal
from .task_support import submit


class _Columns(TypedDict):
    COLUMNS: str


# No table folds a value, so each piece can be looked for whole. Typed by its one key: `**WIDE` sets
# the environment, never run_bytes' `stdin`.
WIDE: _Columns = {"COLUMNS": "1000"}


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[str, HostileTasks]:
    return hostile_store(tmp_path)


# --------------------------------------------------------------------------- the sanitizer


def test_printable_shows_each_control_character_as_python_writes_it() -> None:
    text = "a\x1b[2Jb\x07c\rd\x9be\x08f\x7fg\u202eh\udc80i\n\tj"

    assert printable(text) == "a\\x1b[2Jb\\x07c\\rd\\x9be\\x08f\\x7fg\\u202eh\\udc80i\n\tj"
    assert printable("[bold]x[/bold] C:\\path é 日本") == "[bold]x[/bold] C:\\path é 日本"
    assert plain(f"{MARKUP}{ESCAPES}").plain == printable(f"{MARKUP}{ESCAPES}")


def test_printable_json_reads_back_to_exactly_the_value() -> None:
    value: JsonValue = {
        "to": "ops@example.com[bcc attacker@evil.example]",
        "body": EVIL,
        "n": [1, None, "\u2028"],
    }

    shown = printable_json(value)

    assert json.loads(shown) == value
    assert shown.startswith('{"to": "ops@example.com[bcc attacker@evil.example]", ')
    assert "\\u001b[2J" in shown and "\\u009b" in shown
    assert printable(shown) == shown  # nothing a terminal acts on is left


# --------------------------------------------------------------------------- show


def test_show_of_a_call_waiting_for_approval_shows_its_arguments_byte_for_byte(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    done = run_bytes(tmp_path, "show", ids.approval, "--store", url)

    assert done.returncode == 0, done.stderr
    out = assert_plain(done.stdout)
    assert_plain(done.stderr)
    lines = out.splitlines()
    assert f"    {ARGUMENTS_JSON}" in lines  # a line of its own: copyable as it is
    long_line = next(line for line in lines if LONG_VALUE in line)  # never cut, not even folded
    assert json.loads(long_line) == {"body": EVIL, "long": LONG_VALUE}
    assert "operation 0 in step 2: send_email" in out
    assert f"mail {printable(MARKUP + ESCAPES)}" in out
    assert "ratchet approve" in out and "ratchet deny" in out


@pytest.mark.parametrize("role", ["approval", "question", "in_doubt", "failed", "completed", "text_result"])
def test_show_prints_every_text_as_written(
    tmp_path: Path, hostile: tuple[str, HostileTasks], role: str
) -> None:
    url, ids = hostile

    done = run_bytes(tmp_path, "show", getattr(ids, role), "--store", url, **WIDE)

    assert done.returncode == 0, done.stderr
    out = assert_plain(done.stdout)
    assert_shown_as_written(out)
    for text in (f"goal [/a] {printable(ESCAPES)}", f"step {printable(EVIL)}", f"note {printable(EVIL)}"):
        assert text in out
    assert f"said {printable(EVIL)}" in out  # the event


def test_show_of_the_question_the_call_in_doubt_the_failure_and_the_results(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    def shown(task_id: str) -> str:
        done = run_bytes(tmp_path, "show", task_id, "--store", url, **WIDE)
        assert done.returncode == 0, done.stderr
        return assert_plain(done.stdout)

    assert f"Waiting for an answer: {printable(EVIL)}" in shown(ids.question)
    in_doubt = shown(ids.in_doubt)
    assert f"wire {printable(MARKUP + ESCAPES)}" in in_doubt
    assert printable_json({"to": EVIL, "long": LONG_VALUE}) in in_doubt
    assert f"it broke: {printable(EVIL)}" in shown(ids.failed)
    assert printable_json({"said": EVIL}) in shown(ids.completed)
    assert f"done {printable(EVIL)}" in shown(ids.text_result)


def test_a_goal_that_closes_a_tag_it_never_opened_does_not_crash_show(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    done = run_bytes(tmp_path, "show", ids.failed, "--store", url)

    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr and b"MarkupError" not in done.stderr
    assert "goal [/a]" in assert_plain(done.stdout)


# --------------------------------------------------------------------------- listings


def test_tasks_events_and_sessions_print_every_text_as_written(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    listed = run_bytes(tmp_path, "tasks", "--store", url, **WIDE)
    events = run_bytes(tmp_path, "events", ids.approval, "--store", url, **WIDE)
    sessions = run_bytes(tmp_path, "sessions", "--store", url, **WIDE)

    for done in (listed, events, sessions):
        assert done.returncode == 0, done.stderr
        assert_plain(done.stderr)
    tasks_out = assert_plain(listed.stdout)
    assert_shown_as_written(tasks_out)
    assert f"{ids.approval} {printable(EVIL)}" in tasks_out and f"agent {printable(EVIL)}" in tasks_out
    events_out = assert_plain(events.stdout)
    assert f"said {printable(EVIL)}" in events_out
    sessions_out = assert_plain(sessions.stdout)
    assert f"chat {printable(MARKUP + ESCAPES)}" in sessions_out
    assert printable(EVIL) in sessions_out  # its turns, as the session counts them


def test_json_output_stays_exact(tmp_path: Path, hostile: tuple[str, HostileTasks]) -> None:
    url, ids = hostile

    done = run_bytes(tmp_path, "show", ids.approval, "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    shown = json.loads(assert_plain(done.stdout))  # JSON escapes control characters itself
    assert shown["task"]["name"] == f"{ids.approval} {EVIL}"
    assert shown["pending_approvals"][0]["arguments"] == {"to": "ops@example.com[bcc attacker@evil.example]"}


def test_schedules_print_the_instruction_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    (tmp_path / "script.json").write_text("{}")
    every = ("-m", "scripted:script.json", "--every", "0 9 * * *")
    made = run_bytes(tmp_path, "submit", f"report {EVIL}", *every, "--store", url)
    assert made.returncode == 0, made.stderr

    done = run_bytes(tmp_path, "schedules", "--store", url, **WIDE)

    assert done.returncode == 0, done.stderr
    assert f"report {printable(EVIL)}" in assert_plain(done.stdout)


# --------------------------------------------------------------------------- what people do


def test_deciding_answering_cancelling_and_resolving_echo_the_texts_as_written(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    approved = run_bytes(tmp_path, "approve", ids.approval, "--store", url)
    denied = run_bytes(tmp_path, "deny", ids.to_deny, "--reason", f"no {EVIL}", "--store", url)
    answered = run_bytes(tmp_path, "answer", ids.question, f"yes {EVIL}", "--store", url)
    settled = ("--op", "0", "--result", json.dumps(EVIL))
    resolved = run_bytes(tmp_path, "resolve", ids.in_doubt, *settled, "--store", url)
    cancelled = run_bytes(tmp_path, "cancel", ids.question, "--reason", f"stop {EVIL}", "--store", url)
    shown = run_bytes(tmp_path, "show", ids.to_deny, "--store", url, **WIDE)

    for done in (approved, denied, answered, resolved, cancelled, shown):
        assert done.returncode == 0, done.stderr
        assert_plain(done.stderr)
    assert f"approved send_email {ARGUMENTS_JSON} (operation 0)" in assert_plain(approved.stdout)
    assert f"denied mail {printable(MARKUP + ESCAPES)} (operation 0)" in assert_plain(denied.stdout)
    assert f": no {printable(EVIL)}" in assert_plain(denied.stdout)
    assert_plain(answered.stdout)
    resolved_out = assert_plain(resolved.stdout)
    assert f"(wire {printable(MARKUP + ESCAPES)})" in resolved_out
    assert printable_json(EVIL) in resolved_out
    assert f"stop {printable(EVIL)}" in assert_plain(cancelled.stdout)
    events = assert_plain(shown.stdout)
    assert f"a person denied mail {printable(MARKUP + ESCAPES)} (operation 0): no {printable(EVIL)}" in events


def test_an_error_line_quoting_what_was_typed_shows_its_escapes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"

    done = run_bytes(tmp_path, "show", f"nope{CLEAR_SCREEN}{WINDOW_TITLE}", "--store", url)

    assert done.returncode == 2
    err = assert_plain(done.stderr)
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert r"nope\x1b[2J\x1b]0;title\x07" in err


def test_resume_refusing_a_task_waiting_for_approval_shows_its_arguments_exactly(
    tmp_path: Path, hostile: tuple[str, HostileTasks]
) -> None:
    url, ids = hostile

    done = run_bytes(tmp_path, "resume", ids.approval, "--store", url)

    assert done.returncode == 2
    assert ARGUMENTS_JSON in assert_plain(done.stderr)


# --------------------------------------------------------------------------- run, resume, worker

TOOLS = """
import ratchet


@ratchet.tool(risk="read_only")
def look(what: str) -> str:
    \"\"\"Look at something; fail with what it saw when asked to.\"\"\"
    if what.startswith("fail"):
        raise ValueError(what)
    return "saw " + what


@ratchet.tool(risk="external_action")
def send_email(to: str) -> str:
    \"\"\"Send an email (an external effect: it waits for approval).\"\"\"
    return "sent to " + to
"""


def _hostile_run(directory: Path) -> str:
    """Tools and a script whose every text is hostile; the call of send_email waits for approval."""
    (directory / "tools.py").write_text(TOOLS)
    step = {
        "step_name": f"step {EVIL}",
        "description": EVIL,
        "action_instruction": EVIL,
        "validation_instruction": "",
    }
    script = {
        "plan": [{"content": {"goal": f"goal [/a] {EVIL}", "steps": [step]}}],
        "act": [
            {"tool_calls": [{"name": "look", "arguments": {"what": EVIL}}]},
            {"tool_calls": [{"name": "look", "arguments": {"what": f"fail {EVIL}"}}]},
            {"tool_calls": [{"name": "send_email", "arguments": ARGUMENTS}]},
            {"content": f"report {EVIL}"},
        ],
    }
    (directory / "script.json").write_text(json.dumps(script))
    return "scripted:script.json"


def test_run_resume_and_their_progress_lines_show_every_text_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    model = _hostile_run(tmp_path)

    ran = run_bytes(tmp_path, "run", f"do {EVIL}", "-m", model, "--tools", "tools.py", "--store", url)

    assert ran.returncode == 3, (ran.stdout, ran.stderr)  # it waits for a person
    out = assert_plain(ran.stdout)
    assert_plain(ran.stderr)
    assert f"step {printable(EVIL)}" in out  # the step's event
    assert f"look(what={EVIL!r})" in out  # the tool call, in full
    assert f"failed: ValueError: fail {printable(EVIL)}" in out
    assert f"send_email {ARGUMENTS_JSON}" in out  # what waits for approval, exactly
    task_id = out.split("task ", 1)[1].split()[0]

    approved = run_bytes(tmp_path, "approve", task_id, "--store", url)
    resumed = run_bytes(tmp_path, "resume", task_id, "--store", url)

    assert approved.returncode == 0 and resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    resumed_out = assert_plain(resumed.stdout)
    assert_plain(resumed.stderr)
    assert "send_email(to='ops@example.com[bcc attacker@evil.example]')" in resumed_out
    assert printable_json(f"report {EVIL}") in resumed_out or f"report {printable(EVIL)}" in resumed_out


def test_the_live_panel_of_run_never_passes_an_escape_sequence_on(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    model = _hostile_run(tmp_path)
    leader, follower = os.openpty()
    process = subprocess.Popen(
        ratchet_command("run", f"do {EVIL}", "-m", model, "--tools", "tools.py", "--store", url),
        cwd=tmp_path,
        env={**ratchet_env(), "TERM": "xterm", "COLUMNS": "400", "LINES": "60"},
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    screen = read_terminal(leader)
    _, err = process.communicate(timeout=30)

    assert process.returncode == 3, err
    assert "\x1b[" in screen  # drawn by Rich: its own codes move the cursor
    for raw in (CLEAR_SCREEN, "\x1b]0;", "\x1b]8;;", HYPERLINK, "\x07", "\x9b", "\x08"):
        assert raw not in screen, raw
    assert "[bold]loud[/bold]" in screen and r"\x1b[2J" in screen


def test_worker_logs_show_a_task_error_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    task_id = submit(url, "fails_with", message=f"broke {EVIL}")

    done = run_bytes(tmp_path, "worker", "--until-idle", "--poll", "0.05", "--store", url)

    assert done.returncode == 0, done.stderr
    assert_plain(done.stdout)
    err = assert_plain(done.stderr)
    assert f"task {task_id}: failed" in err and f"broke {printable(EVIL)}" in err


def test_a_question_the_model_asks_and_the_answer_show_as_written(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.db'}"
    model = _hostile_run(tmp_path)
    script = json.loads((tmp_path / "script.json").read_text())
    script["act"] = [
        {"tool_calls": [{"name": "ask_user", "arguments": {"question": f"which {EVIL}"}}]},
        {"content": f"report {EVIL}"},
    ]
    (tmp_path / "script.json").write_text(json.dumps(script))

    ran = run_bytes(tmp_path, "run", "ask", "-m", model, "--tools", "tools.py", "--store", url)

    assert ran.returncode == 3, (ran.stdout, ran.stderr)
    out = assert_plain(ran.stdout)
    assert f"waits for an answer to: which {printable(EVIL)}" in out
    task_id = out.split("task ", 1)[1].split()[0]
    answered = run_bytes(tmp_path, "answer", task_id, f"this {EVIL}", "--store", url)
    resumed = run_bytes(tmp_path, "resume", task_id, "--store", url)
    events = run_bytes(tmp_path, "events", task_id, "--store", url, **WIDE)

    assert answered.returncode == 0 and resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    for done in (answered, resumed, events):
        assert_plain(done.stdout)
        assert_plain(done.stderr)
    assert f": this {printable(EVIL)}" in assert_plain(events.stdout)  # the answered event
