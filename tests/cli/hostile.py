"""Hostile text for the plain-text tests: Rich markup and terminal escape sequences, and where to put it.

`hostile_store` fills a SQLite store, through the Python store API, with one
task for each thing `ratchet show` presents (a call waiting for approval, a
question, a call in doubt, a failure, a result), every text in it written by
"a model": markup that would hide part of it and escape sequences that would
clear the screen, set the window title or plant a hyperlink. `run_bytes` runs
the real program and keeps its output as bytes, so a CR or an ESC cannot hide
in a text decoding.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from ratchet.records import (
    Approval,
    Event,
    Operation,
    OpKind,
    Session,
    Severity,
    Step,
    StepStatus,
    Task,
    TaskStatus,
    WaitReason,
)
from ratchet.store import open_store

from ..helpers.cli import ratchet_command, ratchet_env

MARKUP = "[bold]loud[/bold] [/a] [link=http://evil.example]click[/link] [bcc attacker@evil.example]"
CLEAR_SCREEN = "\x1b[2J"
WINDOW_TITLE = "\x1b]0;title\x07"
HYPERLINK = "\x1b]8;;http://evil\x1b\\here\x1b]8;;\x1b\\"
ESCAPES = f"{CLEAR_SCREEN}{WINDOW_TITLE}{HYPERLINK}\r\x9b\x08"
EVIL = f"{MARKUP} {ESCAPES}"

# How the escapes show: each control character as Python writes it in a string literal.
SHOWN_ESCAPES = (r"\x1b[2J", r"\x1b]0;title\x07", r"\x1b]8;;http://evil\x1b\here", r"\r", r"\x9b", r"\x08")
SHOWN_MARKUP = (
    "[bold]loud[/bold]",
    "[/a]",
    "[link=http://evil.example]click[/link]",
    "[bcc attacker@evil.example]",
)

# The arguments of the call waiting for approval, and the JSON they must show as, byte for byte.
ARGUMENTS: dict[str, JsonValue] = {"to": "ops@example.com[bcc attacker@evil.example]"}
ARGUMENTS_JSON = '{"to": "ops@example.com[bcc attacker@evil.example]"}'
LONG_VALUE = "x" * 300 + "-the-end"

# A raw control character a terminal would act on: C0 but newline and tab, DEL, C1.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

T0 = dt.datetime(2025, 1, 2, 9, 0, tzinfo=dt.UTC)


def assert_plain(output: bytes) -> str:
    """Check no ESC, BEL, CR or other raw control reached the output; return it as text."""
    text = output.decode("utf-8")
    found = RAW_CONTROL.search(text)
    assert found is None, f"raw {found.group()!r} at {found.start()}: {text!r}"
    return text


def assert_shown_as_written(text: str) -> None:
    """Check every piece of markup appears as written, and every escape sequence as its escape."""
    for piece in (*SHOWN_MARKUP, *SHOWN_ESCAPES):
        assert piece in text, (piece, text)


def run_bytes(cwd: Path, *args: str, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
    """Run `ratchet ARGS...` in `cwd`; its output as bytes."""
    return subprocess.run(
        ratchet_command(*args),
        cwd=cwd,
        env=ratchet_env(**env),
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


@dataclass(frozen=True)
class HostileTasks:
    """The tasks `hostile_store` holds, by what `show` presents of each."""

    approval: str = "t-approval"
    to_deny: str = "t-deny"
    question: str = "t-question"
    in_doubt: str = "t-doubt"
    failed: str = "t-failed"
    completed: str = "t-done"
    text_result: str = "t-text"


def _task(task_id: str, minutes: int, **fields: Any) -> Task:
    moment = T0 + dt.timedelta(minutes=minutes)
    return Task(
        id=task_id,
        name=f"{task_id} {EVIL}",
        instruction=f"do it {EVIL}",
        goal=f"goal [/a] {ESCAPES}",
        agent=f"agent {EVIL}",
        created_at=moment,
        updated_at=moment,
        **fields,
    )


def _op(task_id: str, kind: OpKind, name: str, given: object) -> Operation:
    key = f"{task_id}:0"
    return Operation(task_id=task_id, seq=0, kind=kind, name=name, idempotency_key=key, input=given)


async def _fill(url: str, ids: HostileTasks) -> None:
    waiting = {"status": TaskStatus.WAITING}
    tasks = [
        _task(ids.approval, 0, waiting_on=WaitReason.APPROVAL, **waiting),
        _task(ids.to_deny, 0, waiting_on=WaitReason.APPROVAL, **waiting),
        _task(ids.question, 1, waiting_on=WaitReason.INPUT, **waiting),
        _task(ids.in_doubt, 2, waiting_on=WaitReason.IN_DOUBT, **waiting),
        _task(ids.failed, 3, status=TaskStatus.FAILED, error=f"it broke: {EVIL}"),
        _task(ids.completed, 4, status=TaskStatus.COMPLETED, result={"said": EVIL}),
        _task(ids.text_result, 5, status=TaskStatus.COMPLETED, result=f"done {EVIL}"),
    ]
    store = await open_store(url)
    try:
        for task in tasks:
            await store.create_task(task)
            await store.replace_steps(
                task.id,
                [
                    Step(task_id=task.id, index=0, name=f"step {EVIL}", status=StepStatus.COMPLETED),
                    Step(
                        task_id=task.id,
                        index=1,
                        name=f"second {EVIL}",
                        status=StepStatus.FAILED,
                        attempts=2,
                        failure_message=f"note {EVIL}",
                    ),
                ],
            )
            await store.append_event(
                Event(
                    task_id=task.id,
                    time=T0,
                    kind="progress",
                    severity=Severity.WARNING,
                    message=f"message {EVIL}",
                    display_message=f"said {EVIL}",
                )
            )
        await store.request_approval(
            Approval(
                task_id=ids.approval,
                seq=0,
                tool="send_email",
                arguments=ARGUMENTS,
                step=1,
                why=f"why {EVIL}",
            )
        )
        for task_id, seq in ((ids.approval, 1), (ids.to_deny, 0)):
            await store.request_approval(
                Approval(
                    task_id=task_id,
                    seq=seq,
                    tool=f"mail {MARKUP}{ESCAPES}",
                    arguments={"body": EVIL, "long": LONG_VALUE},
                    why="parallel",
                )
            )
        await store.record_op_started(_op(ids.question, OpKind.QUESTION, "ask_user", {"question": EVIL}))
        await store.record_op_started(
            _op(ids.in_doubt, OpKind.TOOL, f"wire {MARKUP}{ESCAPES}", {"to": EVIL, "long": LONG_VALUE})
        )
        await store.put_session(Session(id=f"chat {MARKUP}{ESCAPES}", state={"turns": EVIL}))
    finally:
        await store.close()


def hostile_store(tmp_path: Path) -> tuple[str, HostileTasks]:
    """A SQLite store in tmp_path with one hostile task of each kind; its URL and the tasks' ids."""
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    ids = HostileTasks()
    asyncio.run(_fill(url, ids))
    return url, ids
