"""`ratchet run`, then `ratchet show`: a replanned plan keeps its abandoned step, a skipped step says why."""

from __future__ import annotations

import json
from pathlib import Path

from ..helpers.cli import RunRatchet, table_cells
from .run_support import TOOLS, acts, plan


def test_show_and_its_json_keep_abandoned_and_skipped_steps_with_their_reasons(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    (tmp_path / "tools.py").write_text(TOOLS)
    replanned = plan("c", "d")["content"]
    (tmp_path / "script.json").write_text(
        json.dumps(
            {
                "plan": [plan("a", "b")],
                "act": [
                    *acts("a"),
                    {"tool_calls": [{"name": "replan", "arguments": {"reason": "b is the wrong way"}}]},
                    {"tool_calls": [{"name": "skip_step", "arguments": {"reason": "c is done already"}}]},
                    *acts("d"),
                ],
                "replan": [{"content": {"steps": replanned["steps"]}}],
            }
        )
    )
    model, tools = "scripted:script.json", "tools.py"
    ran = run_ratchet("run", "keep the ledger", "--model", model, "--tools", tools, "--json", "--store", url)
    assert ran.returncode == 0, ran.stderr
    outcome = json.loads(ran.stdout.splitlines()[-1])
    assert [(s["name"], s["status"], s["failure_message"]) for s in outcome["steps"]] == [
        ("a", "completed", None),
        ("b", "cancelled", "abandoned: b is the wrong way"),
        ("c", "skipped", "c is done already"),
        ("d", "completed", None),
    ]

    shown = run_ratchet("show", outcome["task_id"], "--store", url)
    assert shown.returncode == 0, shown.stderr
    rows = {table_cells(line)[1]: line for line in shown.stdout.splitlines() if len(table_cells(line)) >= 5}
    assert "cancelled" in rows["b"] and "abandoned: b is the wrong way" in rows["b"]
    assert "skipped" in rows["c"] and "c is done already" in rows["c"]

    as_json = json.loads(run_ratchet("show", outcome["task_id"], "--json", "--store", url).stdout)
    steps = {s["name"]: s for s in as_json["steps"]}
    assert (steps["b"]["step"], steps["b"]["status"], steps["b"]["failure_message"]) == (
        2,
        "cancelled",
        "abandoned: b is the wrong way",
    )
    assert (steps["c"]["step"], steps["c"]["status"]) == (3, "skipped")
    events = {e["kind"]: e for e in as_json["events"]}
    assert events["step_skipped"]["data"] == {"step": 3}
    assert events["replanned"]["data"]["trigger"] == "agent"
