"""A tool result over the inline limit is stored once, as an artifact; replay reads it back.

The journal keeps a reference (artifact id, size, encoding, preview), not
the bytes a second time; a resumed task, in this process or after its
worker was killed with SIGKILL, gets the same value.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from pydantic import JsonValue

from ratchet import Budget, Runtime, TaskStatus, open_store
from ratchet.engine.journal.large_results import RESULT_ARTIFACT
from ratchet.limits import MAX_INLINE_RESULT_BYTES
from ratchet.store import StateStore

from ..helpers.cli import ratchet_command, ratchet_env
from ..helpers.sizes import sqlite_bytes, stored_bytes
from .flows import Crash
from .result_flows import FLOWS, digest, payload, runs

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = f"{FLOWS}:keeps_a_big_result"
TEN_MB = 10 * 1024 * 1024
SMALL_BUT_OVER = 200_000  # over the default limit, and quick as JSON


def _inputs(ledger: str, size: int, kind: str = "text", crash: bool = False) -> dict[str, JsonValue]:
    return {"ledger": ledger, "size": size, "kind": kind, "crash": crash}


async def test_a_ten_megabyte_result_is_stored_once_and_the_task_completes(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    task = await rt.run(WORKFLOW, _inputs(ledger, TEN_MB))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == {"sha256": digest(payload(TEN_MB, "text")), "type": "str", "length": TEN_MB}
    assert await stored_bytes(store, task.id) < 1.2 * TEN_MB
    (artifact,) = await store.list_artifacts(task.id)
    assert artifact.id == f"{task.id}-result-0" and artifact.bytes == len(payload(TEN_MB, "text").encode())
    assert artifact.type == "tool_result.big"
    op = (await store.list_ops(task.id))[0]
    assert op.name == "big" and op.output is None
    assert op.meta[RESULT_ARTIFACT] == {
        "artifact_id": artifact.id,
        "bytes": artifact.bytes,
        "encoding": "text",
        "preview": payload(200, "text").replace("\n", " "),
    }


@pytest.mark.parametrize(("kind", "size"), [("text", TEN_MB), ("json", SMALL_BUT_OVER)])
async def test_a_resumed_task_reads_the_large_result_back_from_its_artifact(
    store: StateStore, rt: Runtime, ledger: str, kind: str, size: int
) -> None:
    task_id = await rt.submit(WORKFLOW, _inputs(ledger, size, kind, crash=True))
    with pytest.raises(Crash):  # the worker "dies" after the large result was recorded
        await rt.resume(task_id)

    task = await rt.resume(task_id)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, dict)
    assert task.result["sha256"] == digest(payload(size, kind))
    assert task.result["type"] == type(payload(size, kind)).__name__
    assert runs(ledger, "big") == 1, "the large result was replayed, not made again"
    assert len(await store.list_artifacts(task_id)) == 1


async def test_a_result_within_the_limit_stays_in_the_journal(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    size = MAX_INLINE_RESULT_BYTES // 2
    task = await rt.run(WORKFLOW, _inputs(ledger, size))

    assert task.status is TaskStatus.COMPLETED, task.error
    op = (await store.list_ops(task.id))[0]
    assert op.output == payload(size, "text") and RESULT_ARTIFACT not in op.meta
    assert await store.list_artifacts(task.id) == []


async def test_the_inline_limit_is_the_tasks_budget(store: StateStore, rt: Runtime, ledger: str) -> None:
    task = await rt.run(WORKFLOW, _inputs(ledger, 5000, "json"), budget=Budget(max_inline_result_bytes=1000))

    assert task.status is TaskStatus.COMPLETED, task.error
    (artifact,) = await store.list_artifacts(task.id)
    op = (await store.list_ops(task.id))[0]
    assert op.output is None and op.meta[RESULT_ARTIFACT]["encoding"] == "json"
    assert op.meta[RESULT_ARTIFACT]["artifact_id"] == artifact.id
    assert isinstance(task.result, dict)
    assert task.result["sha256"] == digest(payload(5000, "json"))


# --------------------------------------------------------------------------- a real worker, killed


async def _submit(url: str, ledger: str) -> str:
    async with Runtime(url) as rt:
        return await rt.submit(WORKFLOW, _inputs(ledger, TEN_MB))


async def _stored(url: str, task_id: str) -> tuple[int, object]:
    store = await open_store(url)
    try:
        return await stored_bytes(store, task_id), (await store.get_task(task_id)).result
    finally:
        await store.close()


def _resume(url: str, task_id: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ratchet_command("resume", task_id, "--store", url),
        cwd=REPO,
        env=ratchet_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_killed_after_a_large_result_resumes_with_the_same_value(url: str, ledger: str) -> None:
    task_id = asyncio.run(_submit(url, ledger))

    killed = _resume(url, task_id, RATCHET_CRASH_AT="after_result_commit")  # right after big's result
    assert killed.returncode == -9, killed.stderr
    assert runs(ledger, "big") == 1 and runs(ledger, "after") == 0
    resumed = _resume(url, task_id)

    assert resumed.returncode == 0, resumed.stderr
    size, result = asyncio.run(_stored(url, task_id))
    assert result == {"sha256": digest(payload(TEN_MB, "text")), "type": "str", "length": TEN_MB}
    assert runs(ledger, "big") == 1
    assert size < 1.2 * TEN_MB
    if url.startswith("sqlite:///"):
        assert sqlite_bytes(Path(url.removeprefix("sqlite:///"))) < 1.2 * TEN_MB
