"""`ratchet run --model A --model B`: an agent whose first model answers 503 every time carries on
with the second, and the journal says which model each call went to."""

from __future__ import annotations

import json
from pathlib import Path

from ratchet.records import OpKind, OpStatus, TaskStatus

from ..helpers.cli import RunRatchet
from ..helpers.scripts import plan, say, verdict
from .task_support import stored_task, with_store


def test_run_falls_back_to_the_next_model_and_stays_on_it(
    url: str, run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    broken = {"error": {"status": 503, "retry_after": 0}}
    (tmp_path / "a.json").write_text(json.dumps({"plan": [broken] * 3}))
    (tmp_path / "b.json").write_text(
        json.dumps({"plan": [plan("answer")], "act": [say("done")], "verify": [verdict(True)]})
    )

    done = run_ratchet(
        "run", "do it", "--model", "scripted:a.json", "--model", "scripted:b.json", "--json", "--store", url
    )

    assert done.returncode == 0, done.stderr
    task_id = json.loads(done.stdout.splitlines()[-1])["task_id"]
    assert stored_task(url, task_id).status is TaskStatus.COMPLETED
    ops = [op for op in with_store(url, lambda store: store.list_ops(task_id)) if op.kind is OpKind.MODEL]
    assert [(op.name, op.status, op.input.get("model")) for op in ops] == [
        ("model:plan", OpStatus.FAILED, None),
        ("model:plan", OpStatus.SUCCEEDED, "scripted:b.json"),
        ("model:act", OpStatus.SUCCEEDED, "scripted:b.json"),
        ("model:verify", OpStatus.SUCCEEDED, "scripted:b.json"),
    ]
    events = with_store(url, lambda store: store.list_events(task_id))
    [fell] = [e for e in events if e.kind == "model_fallback"]
    assert (fell.data["from"], fell.data["to"]) == ("scripted:a.json", "scripted:b.json")
