"""Issue 31's streaming, end to end: a real model server that streams its answers (SSE) and holds a
rate limit (429 + Retry-After), a worker process running the task, and every reader at once.

The task's two model calls go to a server that answers one request per window: the second call is
refused with a 429, waits its Retry-After, and streams on its next attempt. Its tokens reach
`Runtime.stream`, a `ratchet stream` process following the task, and the HTTP API's stream, each in
order; the API read dropped midway and resumed with ``Last-Event-ID`` misses nothing and repeats
nothing; and every reader keeps the refused attempt apart from the answer.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx

from ratchet.records import OpKind, StreamEntry, StreamKind, TaskStatus
from ratchet.runtime import Runtime
from ratchet.runtime.streams import answers, attempts

from ..helpers.cli import ratchet_command, ratchet_env
from ..helpers.limited_server import LimitedServer
from ..serve.live_server import Message, SseReader, serve_live
from .stream_flows import STREAM_FLOWS

REPO = Path(__file__).resolve().parents[2]
ANSWER = "alpha beta gamma delta"
PIECES = ["alpha", " beta", " gamma", " delta"]  # a word a chunk, as the server streams it


def _env(server: LimitedServer, home: Path) -> dict[str, str]:
    env = ratchet_env(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        RATCHET_HOME=str(home),
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test",
        NO_PROXY="127.0.0.1,localhost",
    )
    return {k: v for k, v in env.items() if not k.startswith("RATCHET_CRASH")}


def _start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ratchet_command(*args), cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _read_api_dropped_and_resumed(url: str, task_id: str) -> list[Message]:
    """The task's stream over the HTTP API: three messages, the connection dropped, then the rest
    from the last id it gave (as a browser's EventSource resumes)."""
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=60) as client:
        path = f"/api/tasks/{task_id}/stream"
        with client.stream("GET", path) as response:
            reader = SseReader(response)
            before = [reader.next() for _ in range(3)]
        with client.stream("GET", path, headers={"Last-Event-ID": str(before[-1].id)}) as response:
            after = SseReader(response).until("done")
    assert after[-1].event == "done"
    return before + after[:-1]


async def test_a_rate_limited_streamed_run_reaches_every_reader_in_order(url: str, tmp_path: Path) -> None:
    env = _env(server := LimitedServer(limit=1, window=2.0, answer=ANSWER), tmp_path / "home")
    with server:
        async with Runtime(url) as rt:
            task_id = await rt.submit(f"{STREAM_FLOWS}:tell_twice", model="openai:limited-model")
            cli = _start(env, "stream", task_id, "--store", url)  # following the task from its start
            worker = _start(env, "resume", task_id, "--store", url)
            try:
                read: list[StreamEntry] = [entry async for entry in rt.stream(task_id)]
            finally:
                _, worker_err = worker.communicate(timeout=120)
                cli_out, cli_err = cli.communicate(timeout=60)
            assert worker.returncode == 0, worker_err
            assert cli.returncode == 0, cli_err
            task = await rt.get_task(task_id)
            model_ops = [op for op in await rt.store.list_ops(task_id) if op.kind is OpKind.MODEL]

    # The server held its limit, and one request of the run was refused with a 429.
    assert len(server.accepted) == 2 and len(server.refused) >= 1
    assert task.status is TaskStatus.COMPLETED and task.result == [ANSWER, ANSWER]
    first, second = (op.seq for op in model_ops)
    assert model_ops[1].attempt >= 2  # the refused attempt was retried, not failed

    # Runtime.stream: each call's pieces in order, the refused attempt apart, ending "failed".
    assert [e.value for e in read if e.kind is StreamKind.TEXT] == PIECES * 2
    assert answers(read) == {first: ANSWER, second: ANSWER}
    shown = [(a.seq, a.attempt, a.outcome, a.text) for a in attempts(read)]
    assert shown[0] == (first, 1, "succeeded", ANSWER)
    assert [s[2:] for s in shown[1:-1]] == [("failed", "")] * (len(shown) - 2)
    assert shown[-1][0] == second and shown[-1][2:] == ("succeeded", ANSWER)

    # `ratchet stream`: the same text as it came, each answer on a line of its own, the refused
    # attempt said to have failed and the retry set apart.
    lines = cli_out.splitlines()
    assert lines.count(ANSWER) == 2, cli_out
    assert any("failed" in line for line in lines[lines.index(ANSWER) + 1 :]), cli_out

    # The API's stream, dropped after three entries and resumed from the last id it gave.
    messages = _read_api_dropped_and_resumed(url, task_id)
    assert [m.id for m in messages] == [str(e.offset) for e in read]
    assert [(m.event, m.json()["value"]) for m in messages] == [(str(e.kind), e.value) for e in read]
