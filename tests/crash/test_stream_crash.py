"""A worker SIGKILLed while its model call streams; another worker resumes the task.

The stream then holds the cut attempt's pieces, an ``end`` that says it was
interrupted and where it stopped, the retry's ``attempt`` mark that says it
begins again, and the retry's whole answer: a reader tells the two apart
(`attempts`, `answers`, ``ratchet stream``), and the workflow's own values
are there once each.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.records import OpKind, StreamEntry, StreamKind
from ratchet.runtime.streams import answers, attempts
from ratchet.store import StateStore

from ..helpers.loopback import LoopbackServer, Reply
from ..providers.test_openai_streaming import text_stream
from .harness import EXIT_COMPLETED, KILLED, REPO, STORE_KINDS, Stores, finish_worker

TASK_ID = "stream-kill"
PIECES = [f"w{i:02d} " for i in range(30)]
WHOLE = "".join(PIECES)


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "RATCHET_CRASH_AT" and not k.startswith("OPENAI_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["RATCHET_HOME"] = str(home)
    return {**env, **extra}


def _resume(store_url: str, home: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "ratchet", "resume", TASK_ID, "--store", store_url],
        cwd=REPO,
        env=_env(home, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _texts(store: StateStore) -> int:
    return sum(1 for entry in await store.read_stream(TASK_ID) if entry.kind is StreamKind.TEXT)


async def _kill_midway_then_resume(store_url: str, home: Path, model: str, **extra: str) -> list[StreamEntry]:
    async with Runtime(store_url) as rt:
        await rt.submit("tests.engine.stream_flows:noted", task_id=TASK_ID, model=model)
        worker = _resume(store_url, home, **extra)
        deadline = time.monotonic() + 30
        # Killed once a few pieces are stored: mid-answer (30 pieces, 0.1 s apart).
        while await _texts(rt.store) < 3 and worker.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        os.kill(worker.pid, signal.SIGKILL)
        assert finish_worker(worker) == KILLED
        assert 3 <= await _texts(rt.store) < len(PIECES)

        assert finish_worker(_resume(store_url, home, **extra)) == EXIT_COMPLETED

        task = await rt.store.get_task(TASK_ID)
        assert task.status is TaskStatus.COMPLETED and task.result == WHOLE
        [model_op] = [op for op in await rt.store.list_ops(TASK_ID) if op.kind is OpKind.MODEL]
        assert model_op.output["content"] == WHOLE
        return [entry async for entry in rt.stream(TASK_ID, follow=False)]


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_stream_cut_by_a_kill_is_told_apart_from_the_retry_that_answers(tmp_path: Path, kind: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"act": [{"chunks": PIECES, "chunk_delay": 0.1}]}), encoding="utf-8")
    with Stores(kind) as stores:
        store_url = stores.fresh(tmp_path)
        entries = asyncio.run(_kill_midway_then_resume(store_url, tmp_path / "home", f"scripted:{script}"))
        # What a person reads of it: `ratchet stream`, a real process, shows the two attempts apart.
        shown = subprocess.run(
            [sys.executable, "-m", "ratchet", "stream", TASK_ID, "--no-follow", "--store", store_url],
            cwd=REPO,
            env=_env(tmp_path / "home"),
            capture_output=True,
            text=True,
            timeout=60,
        )

    cut, retry = attempts(entries)
    assert (cut.seq, cut.attempt, cut.outcome) == (1, 1, "interrupted")
    assert cut.text and WHOLE.startswith(cut.text) and cut.text != WHOLE
    assert (retry.seq, retry.attempt, retry.outcome, retry.text) == (1, 1, "succeeded", WHOLE)
    assert retry.restarted and cut.stop < retry.start
    # The cut attempt's last piece, then the marks the resumed run wrote before its own pieces.
    last_piece = max(e.offset for e in entries if e.kind is StreamKind.TEXT and e.offset < cut.stop)
    assert entries[cut.stop].kind is StreamKind.END
    assert entries[cut.stop].value == {"outcome": "interrupted", "cut_at": last_piece}
    assert entries[retry.start].value == {"restarted": True, "cut_at": last_piece}
    assert retry.start == cut.stop + 1
    assert answers(entries) == {1: WHOLE}
    values = [(e.seq, e.key, e.value) for e in entries if e.kind is StreamKind.VALUE]
    assert values == [(0, "phase", {"at": "start"}), (2, "phase", {"at": "end"})]
    assert [e.offset for e in entries] == list(range(len(entries)))

    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout == (
        'phase: {"at": "start"}\n'
        f"{cut.text}\n"
        "--- model call #1, attempt 1 was cut off ---\n"
        "--- model call #1, attempt 1 begins again "
        "(attempt 1 was cut off: what it wrote is not part of this answer) ---\n"
        f"{WHOLE}\n"
        'phase: {"at": "end"}\n'
    )


@pytest.mark.parametrize("kind", STORE_KINDS)
def test_a_kill_mid_stream_from_a_real_model_server_leaves_the_attempts_apart(
    tmp_path: Path, kind: str
) -> None:
    """The same kill, the answer streamed over SSE by an OpenAI-compatible server on loopback."""
    with LoopbackServer() as server, Stores(kind) as stores:
        server.answer(
            Reply(stream=text_stream(*PIECES), stream_delay=0.1),  # the attempt the kill cuts
            Reply(stream=text_stream(*PIECES)),  # the resumed run's
        )
        store_url = stores.fresh(tmp_path)
        entries = asyncio.run(
            _kill_midway_then_resume(
                store_url,
                tmp_path / "home",
                "openai:test-model",
                OPENAI_BASE_URL=f"{server.url}/v1",
                OPENAI_API_KEY="sk-test",
                NO_PROXY="127.0.0.1,localhost",
            )
        )

    assert [r.body["stream"] for r in server.received] == [True, True]
    cut, retry = attempts(entries)
    assert (cut.outcome, retry.outcome, retry.restarted) == ("interrupted", "succeeded", True)
    assert cut.text and WHOLE.startswith(cut.text) and cut.text != WHOLE
    assert retry.text == WHOLE and answers(entries) == {1: WHOLE}
    last_piece = max(e.offset for e in entries if e.kind is StreamKind.TEXT and e.offset < cut.stop)
    assert entries[cut.stop].value == {"outcome": "interrupted", "cut_at": last_piece}
    assert entries[retry.start].value == {"restarted": True, "cut_at": last_piece}
