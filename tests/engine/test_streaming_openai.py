"""An OpenAI-compatible model that streams (SSE from a real server on loopback), through a worker
process, into the task's stream: a reader following the task gets the pieces in order, between marks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ratchet.records import OpKind, StreamEntry, StreamKind, TaskStatus
from ratchet.runtime import Runtime
from ratchet.runtime.streams import answers

from ..helpers.loopback import LoopbackServer, Reply
from ..providers.test_openai_streaming import text_stream
from .stream_flows import STREAM_FLOWS

REPO = Path(__file__).resolve().parents[2]
PIECES = ["The ", "quick ", "brown ", "fox ", "jumps."]


def _worker(url: str, task_id: str, server: LoopbackServer, home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RATCHET_CRASH"))}
    env.update(
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        RATCHET_HOME=str(home),
        OPENAI_BASE_URL=f"{server.url}/v1",
        OPENAI_API_KEY="sk-test",
        NO_PROXY="127.0.0.1,localhost",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "ratchet", "resume", task_id, "--store", url],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_a_streamed_openai_answer_reaches_a_reader_of_the_task_in_order(
    url: str, tmp_path: Path
) -> None:
    with LoopbackServer() as server:
        server.answer(Reply(stream=text_stream(*PIECES), stream_delay=0.05))
        async with Runtime(url) as rt:
            task_id = await rt.submit(f"{STREAM_FLOWS}:tell", model="openai:test-model")
            worker = _worker(url, task_id, server, tmp_path / "home")
            try:
                read: list[StreamEntry] = [entry async for entry in rt.stream(task_id)]
            finally:
                _, err = worker.communicate(timeout=60)
            assert worker.returncode == 0, err

            task = await rt.get_task(task_id)
            [model_op] = [op for op in await rt.store.list_ops(task_id) if op.kind is OpKind.MODEL]

    assert server.last.body["stream"] is True
    assert task.status is TaskStatus.COMPLETED and task.result == "".join(PIECES)
    assert [e.kind for e in read] == [StreamKind.ATTEMPT, *[StreamKind.TEXT] * len(PIECES), StreamKind.END]
    assert [e.value for e in read if e.kind is StreamKind.TEXT] == PIECES
    assert read[-1].value == {"outcome": "succeeded"}
    assert answers(read) == {0: model_op.output["content"]} == {0: "".join(PIECES)}
