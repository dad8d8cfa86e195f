"""Recorded agent tasks for the `ratchet eval` tests: a tools file whose every run shows, and the scripts.

Each task is a real `ratchet run` of the planning agent with the scripted
model and `TOOLS`, whose one tool appends a line to ``appended.txt``: a tool
that ran for any reason leaves a line there. The scripted model answers by
purpose and ordinal, not by the request, so the tasks an eval should find
changed are recorded with another script: ``recorded-same.json`` is the new
model's script as it is (``new.json``), ``recorded-changed.json`` differs from
it in one tool call, the second (``append(line='TWO')`` where the new model
calls ``append(line='two')``). Against those tasks, the new model changes
that one call; against the others, nothing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from .cli import ratchet_command, ratchet_env

__all__ = [
    "NEW_MODEL",
    "TOOLS",
    "appended",
    "fingerprint",
    "record",
    "write_files",
]

TOOLS = """
from pathlib import Path

import ratchet

HERE = Path(__file__).parent


@ratchet.tool
def append(line: str) -> str:
    \"\"\"Append a line to appended.txt.\"\"\"
    with (HERE / "appended.txt").open("a") as out:
        out.write(line + "\\n")
    return f"appended {line}"
"""

NEW_MODEL = "scripted:new.json"


def _script(lines: tuple[str, ...]) -> dict[str, Any]:
    steps = [
        {
            "step_name": f"append {line.lower()}",
            "description": f"append {line.lower()}",
            "action_instruction": f"append the line {line.lower()}",
            "validation_instruction": "",
        }
        for line in lines
    ]
    act: list[dict[str, Any]] = []
    for line in lines:
        act += [
            {"tool_calls": [{"name": "append", "arguments": {"line": line}}]},
            {"content": f"appended {line.lower()}"},
        ]
    return {"plan": [{"content": {"goal": "append the lines", "steps": steps}}], "act": act}


def write_files(directory: Path) -> None:
    """The tools file, the two scripts the tasks are recorded with, and the new model's."""
    (directory / "tools.py").write_text(TOOLS)
    for name, lines in (
        ("recorded-same.json", ("one", "two")),
        ("recorded-changed.json", ("one", "TWO")),
        ("new.json", ("one", "two")),
    ):
        (directory / name).write_text(json.dumps(_script(lines)))


def record(
    directory: Path, url: str, *, same: int, changed: int, env: dict[str, str] | None = None
) -> list[str]:
    """Run `same` + `changed` tasks for real (``ratchet run``), labelled ``kind=same`` or ``kind=changed``."""
    ids = []
    for index in range(same + changed):
        kind = "same" if index < same else "changed"
        done = subprocess.run(
            ratchet_command(
                "run",
                f"append the lines, round {index + 1}",
                "--model",
                f"scripted:recorded-{kind}.json",
                "--tools",
                "tools.py",
                "--label",
                f"kind={kind}",
                "--json",
                "--store",
                url,
            ),
            cwd=directory,
            env=env or ratchet_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout.splitlines()[-1])
        assert shown["status"] == "completed", shown
        ids.append(shown["task_id"])
    return ids


def appended(directory: Path) -> list[str]:
    """The lines the tool appended, every run of it."""
    path = directory / "appended.txt"
    return path.read_text().splitlines() if path.exists() else []


def fingerprint(directory: Path, name: str = "ratchet.db") -> dict[str, str]:
    """The SQLite store's files by their SHA-256: the database and its WAL, if there (not the
    shared-memory index, where every reader notes what it reads)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.glob(f"{name}*"))
        if not path.name.endswith("-shm")
    }
