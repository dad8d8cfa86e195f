"""A workflow changed with ``ctx.patched`` between a SIGKILL and its resume (docs/durability.md).

The workflow is a file the test writes: version 1, run by a worker killed
with SIGKILL right after a result is committed; then version 2 is written
over it (a deploy), and a fresh worker process, allowing compatible code
versions (docs/workers.md, "Code versions"), resumes the task.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ratchet import Runtime, Task, TaskStatus
from ratchet.records import OpKind
from ratchet.store import StateStore
from ratchet.trust.code import ALLOW_CODE_ENV

from ..engine.flows import entries
from .harness import EXIT_COMPLETED, KILLED, Stores, _spawn, _with_store, finish_worker, worker_command

OLD = """
from ratchet.engine import workflow
from tests.engine.flows import record


@workflow(tools=[record])
async def billing(ctx, ledger):
    await ctx.call_tool("record", {"ledger": ledger, "label": "charge"})
    await ctx.call_tool("record", {"ledger": ledger, "label": "ship"})
    await ctx.call_tool("record", {"ledger": ledger, "label": "close"})
    return "old code"
"""

NEW = """
from ratchet.engine import workflow
from tests.engine.flows import record


@workflow(tools=[record])
async def billing(ctx, ledger):
    await ctx.call_tool("record", {"ledger": ledger, "label": "charge"})
    if await ctx.patched("send-receipt"):
        await ctx.call_tool("record", {"ledger": ledger, "label": "receipt"})
        done = "new code"
    else:
        done = "old code"
    await ctx.call_tool("record", {"ledger": ledger, "label": "ship"})
    await ctx.call_tool("record", {"ledger": ledger, "label": "close"})
    return done
"""


@pytest.mark.parametrize(
    ("killed_after", "result", "labels"),
    [
        (1, "new code", ["charge", "receipt", "ship", "close"]),
        (2, "old code", ["charge", "ship", "close"]),
    ],
    ids=["before-the-patch-point", "past-the-patch-point"],
)
def test_a_workflow_changed_between_a_kill_and_its_resume_completes(
    tmp_path: Path,
    stores: Stores,
    monkeypatch: pytest.MonkeyPatch,
    killed_after: int,
    result: str,
    labels: list[str],
) -> None:
    code = tmp_path / "deployed" / "billing.py"
    code.parent.mkdir()
    code.write_text(OLD, encoding="utf-8")
    monkeypatch.setenv(ALLOW_CODE_ENV, os.pathsep.join([os.environ[ALLOW_CODE_ENV], str(code.parent)]))
    url = stores.fresh(tmp_path / "store")
    ledger = str(tmp_path / "ledger.jsonl")

    async def submit(store: StateStore) -> str:
        async with Runtime(store, allow_code=[code.parent]) as runtime:
            return await runtime.submit(f"{code}:billing", {"ledger": ledger}, task_id="billing-1")

    task_id = _with_store(url, submit)
    killed = finish_worker(_spawn(worker_command(url, task_id), f"after_result_commit@{killed_after}"))
    assert killed == KILLED
    assert len(entries(ledger)) == killed_after

    code.write_text(NEW, encoding="utf-8")  # the deploy, while the task is in flight
    # Another version of the code: its worker runs the task once the journal replays on it.
    monkeypatch.setenv("RATCHET_COMPATIBLE_VERSIONS", "1")
    assert finish_worker(_spawn(worker_command(url, task_id))) == EXIT_COMPLETED

    async def read(store: StateStore) -> tuple[Task, list[OpKind]]:
        return await store.get_task(task_id), [op.kind for op in await store.list_ops(task_id)]

    task, kinds = _with_store(url, read)
    assert task.status is TaskStatus.COMPLETED
    assert task.result == result
    assert [e["label"] for e in entries(ledger)] == labels  # every effect once
    assert kinds.count(OpKind.PATCH) == (1 if result == "new code" else 0)
