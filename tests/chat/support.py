"""Helpers for the chat tests: scripts for the scripted model, and the real `ratchet` program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ratchet.records import Session
from ratchet.store import open_store


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def write_turn_script(path: Path, calls: list[dict[str, Any]], answer: str, *, delay: float = 0.0) -> Path:
    """A one-turn script: the tool calls, then the answer (after `delay` seconds)."""
    final: dict[str, Any] = {"content": answer}
    if delay:
        final["delay"] = delay
    path.write_text(json.dumps({"act": [{"tool_calls": calls}, final]}))
    return path


def chat_env(**extra: str) -> dict[str, str]:
    env = {
        key: value for key, value in os.environ.items() if key not in ("RATCHET_STORE", "RATCHET_CRASH_AT")
    }
    env.update(COLUMNS="200", NO_COLOR="1", RATCHET_HOME=extra.pop("RATCHET_HOME", "."), **extra)
    return env


def ratchet(*args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=chat_env(**env),
        timeout=120,
        check=False,
    )


def start_ratchet(*args: str, cwd: Path, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ratchet", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=chat_env(**env),
    )


async def stored_session(url: str, session_id: str) -> Session:
    store = await open_store(url, create=False)
    try:
        return await store.get_session(session_id)
    finally:
        await store.close()
