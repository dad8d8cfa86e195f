"""The team workflow (``ratchet.demo.team``) with one scripted model per role, on each store."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pydantic import JsonValue

from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore


def _model(role: str) -> str:
    return f"scripted:{resources.files('ratchet.demo').joinpath(f'team_{role}.json')}"


async def test_the_team_plans_codes_in_children_reviews_and_fixes(
    store: StateStore, rt: Runtime, tmp_path: Path
) -> None:
    out = tmp_path / "calc"
    inputs: dict[str, JsonValue] = {
        "goal": "a calculator",
        "architect": _model("architect"),
        "coder": _model("coder"),
        "reviewer": _model("reviewer"),
        "directory": str(out),
        "max_concurrency": 2,
    }
    task_id = await rt.submit("ratchet.demo.team:team", inputs)

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result is not None and isinstance(task.result, dict)
    assert task.result["modules"] == ["tokens", "parser", "evaluate", "cli"]
    assert isinstance(task.result["review"], dict)
    assert task.result["review"]["fixes"] == [
        {"module": "cli", "request": "reject an empty expression with a clear error"}
    ]
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(f"{p}{m}.py" for m in task.result["modules"] for p in ("", "test_"))
    assert "The tokens module" in (out / "tokens.py").read_text()
    assert (out / "cli.py").read_text().startswith("# Review fix: reject an empty expression")
    # One child per module, then one for the fix; each coder asked its own model once.
    children = [t for t in await store.list_tasks() if t.parent_id == task_id]
    assert sorted(c.name for c in children) == sorted(
        ["code tokens", "code parser", "code evaluate", "code cli", "fix cli"]
    )
    for child in children:
        ops = await store.list_ops(child.id)
        assert [op.input["model"] for op in ops if op.kind == "model"] == [_model("coder")]
    parent_models = [op.input["model"] for op in await store.list_ops(task_id) if op.kind == "model"]
    assert parent_models == [_model("architect"), _model("reviewer")]
