"""``ratchet run --session ID``: an agent with memory across tasks, from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..helpers.cli import RunRatchet, assert_one_line_error
from .run_support import TOOLS, acts, script
from .task_support import with_store


def test_a_second_run_on_a_session_plans_with_the_first_ones_exchange(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=acts("a"), steps=("a",), check="")
    common = ("--model", model, "--tools", "tools.py", "--session", "ledger-keeper", "--json", "--store", url)

    first = run_ratchet("run", "record a", *common)
    second = run_ratchet("run", "what did you record?", *common)

    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    task_id = json.loads(second.stdout.splitlines()[-1])["task_id"]
    ops = with_store(url, lambda store: store.list_ops(task_id))
    [planned] = [op for op in ops if op.name == "model:plan"]
    said = [(m["role"], m["content"]) for m in planned.input["messages"][1:]]
    assert said == [("user", "record a"), ("assistant", "recorded a"), ("user", "what did you record?")]
    state: dict[str, Any] = with_store(url, lambda store: store.get_session("ledger-keeper")).state
    assert [h["user"] for h in state["history"]] == ["record a", "what did you record?"]


def test_an_empty_session_id_is_bad_input(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    model = script(tmp_path, act=acts("a"), steps=("a",))
    done = run_ratchet("run", "record a", "--model", model, "--session", " ", "--store", "memory://")

    assert done.returncode == 2
    assert_one_line_error(done, "--session needs a session id")
