"""A LangGraph graph with tools and a person's approval, its process killed with SIGKILL, resumes from
RatchetSaver as it does from SqliteSaver: the same final state, the same history, the same effects.

Each turn is a real process (langgraph_crash_child.py) that takes the thread up where it is; the kill
is the process's own SIGKILL at a named point (langgraph_tools_graph.crash_point), once:

- ``agent:2``: in the agent's second call, after the tools node's checkpoint was committed, before
  the approval: the thread goes on from that checkpoint and the tool is not called again;
- ``tool:e1``: inside the tool, after it wrote entry e1 to the ledger, after the approval: LangGraph
  runs again a node that had not finished, so e1 is written twice, by either saver.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .langgraph_tools_graph import CRASH_ENV, LEDGER_ENV, MARK_ENV

REPO = Path(__file__).resolve().parents[2]
KILLED = -signal.SIGKILL
MAX_TURNS = 6
EXPECTED_LEDGER = {"agent:2": ["e0", "e1", "e2"], "tool:e1": ["e0", "e1", "e1", "e2"]}


def run_thread(
    kind: str, url: str, workdir: Path, crash: str | None
) -> tuple[dict[str, Any], list[str], int]:
    """Turns of the child until the thread ends: its last report, the ledger's lines, the kills.

    The thread is named after `workdir`, so several share a store."""
    workdir.mkdir()
    ledger = workdir / "ledger.txt"
    env = {**os.environ, LEDGER_ENV: str(ledger), MARK_ENV: str(workdir / "crashed")}
    if crash is not None:
        env[CRASH_ENV] = crash
    kills = 0
    for _ in range(MAX_TURNS):
        done = subprocess.run(
            [sys.executable, "-m", "tests.integrations.langgraph_crash_child", kind, url, workdir.name],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO,
            timeout=120,
        )
        if done.returncode == KILLED:
            kills += 1
            continue
        assert done.returncode == 0, done.stderr
        report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        if not report["next"]:
            return report, ledger.read_text(encoding="utf-8").split(), kills
    raise AssertionError(f"the thread did not end in {MAX_TURNS} turns")


@pytest.mark.parametrize("crash", ["agent:2", "tool:e1"])
def test_a_killed_graph_resumes_from_ratchetsaver_as_from_sqlitesaver(
    url: str, crash: str, tmp_path: Path
) -> None:
    unkilled, unkilled_ledger, _ = run_thread("ratchet", url, tmp_path / "unkilled", None)
    sqlite_url = f"sqlite:///{tmp_path / 'sqlitesaver.db'}"
    theirs, their_ledger, their_kills = run_thread("sqlite", sqlite_url, tmp_path / "sqlitesaver", crash)
    ours, our_ledger, our_kills = run_thread("ratchet", url, tmp_path / "ratchetsaver", crash)

    assert their_kills == our_kills == 1
    assert ours["outcome"] == theirs["outcome"] == unkilled["outcome"]
    assert ours["history"] == theirs["history"]
    assert our_ledger == their_ledger == EXPECTED_LEDGER[crash]
    assert unkilled_ledger == ["e0", "e1", "e2"]
