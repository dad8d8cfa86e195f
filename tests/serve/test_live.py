"""The live streams over HTTP: a real uvicorn server, a worker process running a scripted task, httpx."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from ratchet.records import Event, TaskStatus
from ratchet.serve.live import live_router
from ratchet.store import StateStore, store_from_url

from ..helpers.builders import make_task
from ..helpers.cli import ratchet_command, ratchet_env
from .live_server import SseReader, serve_live

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
SCRIPT = HELPERS / "failover_script.json"
TOOLS = HELPERS / "failover_tools.py"
TIMEOUT = 60.0


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    # Each tool call takes a moment, so the streams are read while the task runs.
    return ratchet_env(
        RATCHET_FAILOVER_LEDGER=str(tmp_path / "ledger.db"), RATCHET_FAILOVER_TOOL_SECONDS="0.3"
    )


def _ratchet(tmp_path: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        ratchet_command(*args), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _submit(tmp_path: Path, env: dict[str, str], url: str) -> str:
    out = _ratchet(
        tmp_path, env, "submit", "record build and ship", "--model", f"scripted:{SCRIPT}",
        "--tools", str(TOOLS), "--json", "--store", url,
    )  # fmt: skip
    return str(json.loads(out)["task_id"])


def _worker(tmp_path: Path, env: dict[str, str], url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ratchet_command("worker", "--until-idle", "--poll", "0.05", "--store", url),
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish(worker: subprocess.Popen[str]) -> None:
    out, err = worker.communicate(timeout=TIMEOUT)
    assert worker.returncode == 0, (out, err)


def test_a_task_stream_dropped_and_resumed_gives_every_event_once_in_order(
    tmp_path: Path, url: str, env: dict[str, str]
) -> None:
    task_id = _submit(tmp_path, env, url)
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        worker = _worker(tmp_path, env, url)
        stream_url = f"/api/tasks/{task_id}/events/stream"
        with client.stream("GET", stream_url) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            reader = SseReader(response)
            first = [reader.next() for _ in range(3)]
        # Dropped mid-run; the worker goes on meanwhile.
        last_id = first[-1].id
        assert last_id is not None
        with client.stream("GET", stream_url, headers={"Last-Event-ID": last_id}) as response:
            rest = SseReader(response).until("end")
        _finish(worker)

    messages = first + rest[:-1]
    assert [m.id for m in messages] == [str(seq) for seq in range(1, len(messages) + 1)]
    assert [m.json()["seq"] for m in messages] == list(range(1, len(messages) + 1))
    assert rest[-1].json() == {"task_id": task_id, "status": "completed"}
    assert rest[-1].id is None
    # The very records and keys of `ratchet events --json`.
    printed = _ratchet(tmp_path, env, "events", task_id, "--json", "--store", url).splitlines()
    assert [m.json() for m in messages] == [json.loads(line) for line in printed]


def test_the_after_query_resumes_where_no_header_can_be_set_and_an_ended_task_stream_ends(
    tmp_path: Path, env: dict[str, str]
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = _submit(tmp_path, env, url)
    _finish(_worker(tmp_path, env, url))
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        with client.stream("GET", f"/api/tasks/{task_id}/events/stream") as response:
            every = SseReader(response).until("end")
        with client.stream("GET", f"/api/tasks/{task_id}/events/stream?after=2") as response:
            after_two = SseReader(response).until("end")
        # The header, which a reconnecting EventSource sends, wins over the page's first ?after=.
        resumed = client.stream(
            "GET", f"/api/tasks/{task_id}/events/stream?after=1", headers={"Last-Event-ID": "4"}
        )
        with resumed as response:
            after_four = SseReader(response).until("end")
    assert [m.id for m in after_two] == [m.id for m in every[2:]]
    assert [m.id for m in after_four] == [m.id for m in every[4:]]


def _changes_until_completed(reader: SseReader, task_id: str) -> list[dict[str, object]]:
    changes: list[dict[str, object]] = []
    while not changes or (changes[-1]["task_id"], changes[-1]["status"]) != (task_id, "completed"):
        message = reader.next()
        assert message.id == str(message.json()["position"])
        changes.append(message.json())
    return changes


def test_the_global_stream_shows_creation_and_each_status_move_resumably(
    tmp_path: Path, url: str, env: dict[str, str]
) -> None:
    earlier = _submit(tmp_path, env, url)
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        with client.stream("GET", "/api/stream") as response:
            reader = SseReader(response)
            start = reader.next()  # no position given: it starts from now, and says where that is
            assert (start.event, start.id, start.json()) == ("start", "1", {"position": 1})
            task_id = _submit(tmp_path, env, url)
            worker = _worker(tmp_path, env, url)
            live = _changes_until_completed(reader, task_id)
        _finish(worker)
        with client.stream("GET", "/api/stream", headers={"Last-Event-ID": "0"}) as response:
            replayed = _changes_until_completed(SseReader(response), task_id)
        with client.stream("GET", "/api/stream?after=3") as response:
            reader = SseReader(response)
            after_three = [reader.next().json() for _ in range(len(replayed) - 3)]

    assert [c["position"] for c in replayed] == list(range(1, len(replayed) + 1))
    assert replayed[0]["task_id"] == earlier
    assert live == replayed[1:]  # from position 1 on, as the start message said
    assert after_three == replayed[3:]
    mine = [(c["kind"], c["status_text"]) for c in replayed if c["task_id"] == task_id]
    assert mine[0] == ("created", "queued")
    assert ("status", "running") in mine and mine[-1] == ("status", "completed")
    shown = next(c for c in replayed if c["task_id"] == task_id)
    task = json.loads(_ratchet(tmp_path, env, "show", task_id, "--json", "--store", url))["task"]
    assert (shown["name"], shown["agent"]) == (task["name"], task["agent"])


def test_an_unknown_task_is_404_and_a_bad_cursor_400_each_with_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        missing = client.get("/api/tasks/nope/events/stream")
        bad_header = client.get("/api/stream", headers={"Last-Event-ID": "abc"})
        bad_query = client.get("/api/tasks/nope/events/stream?after=-1")
        too_big = client.get("/api/stream?after=" + "9" * 30)
    assert missing.status_code == 404
    assert missing.json()["detail"] == "no task has the id 'nope'"
    assert bad_header.status_code == 400
    assert bad_query.status_code == 400
    assert too_big.status_code == 400
    for response in (bad_header, bad_query, too_big):
        detail = response.json()["detail"]
        assert "\n" not in detail and "whole number" in detail
    assert "Last-Event-ID" in bad_header.json()["detail"]


def test_a_client_going_away_ends_its_stream_and_heartbeats_keep_an_idle_one_alive(
    tmp_path: Path, env: dict[str, str]
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = _submit(tmp_path, env, url)  # queued, no worker: its stream stays idle
    with (
        serve_live(url, heartbeat=0.2) as served,
        httpx.Client(base_url=served.base, timeout=TIMEOUT) as client,
    ):
        with client.stream("GET", f"/api/tasks/{task_id}/events/stream") as response:
            reader = SseReader(response)
            # A message is sent from inside the stream's watch on the store, so the watch is open
            # now (a heartbeat proves nothing: it is the response's own ping, sent apart).
            assert reader.next().id is not None  # the event its submission wrote
            assert len(served.store._feeds) == 1
            reader.heartbeat()  # nothing more happens: the heartbeats keep the stream alive
        deadline = time.monotonic() + TIMEOUT
        while served.store._feeds:  # the stream's watch on the store is given back
            assert time.monotonic() < deadline, "the stream kept working after its client left"
            time.sleep(0.05)


def test_the_streams_are_in_the_openapi_schema_as_event_streams() -> None:
    app = FastAPI()
    app.include_router(live_router(store_from_url("memory://")))
    paths = app.openapi()["paths"]
    for path in ("/api/tasks/{task_id}/events/stream", "/api/stream"):
        operation = paths[path]["get"]
        assert "text/event-stream" in operation["responses"]["200"]["content"]
        assert "Last-Event-ID" in {parameter["name"] for parameter in operation["parameters"]}


async def _complete(store: StateStore, task_id: str) -> None:
    async with store.transaction() as tx:
        task = await tx.get_task(task_id)
        await tx.update_task(task.transition(TaskStatus.COMPLETED, result="done"))
        await tx.append_event(Event(task_id=task_id, kind="task", message="all done"))


def test_on_the_memory_store_both_streams_resume_without_gap_or_duplicate() -> None:
    with serve_live("memory://") as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        store = served.store
        task = served.run(store.create_task(make_task("t1")))
        served.run(store.update_task(task.transition(TaskStatus.RUNNING)))
        for number in range(1, 6):
            served.run(store.append_event(Event(task_id="t1", kind="progress", message=f"p{number}")))
        with client.stream("GET", "/api/tasks/t1/events/stream") as response:
            reader = SseReader(response)
            first = [reader.next() for _ in range(3)]
        for number in range(6, 9):
            served.run(store.append_event(Event(task_id="t1", kind="progress", message=f"p{number}")))
        with client.stream("GET", "/api/tasks/t1/events/stream", headers={"Last-Event-ID": "3"}) as response:
            reader = SseReader(response)
            rest = [reader.next() for _ in range(5)]
            served.run(_complete(store, "t1"))
            rest += reader.until("end")
        with client.stream("GET", "/api/stream", headers={"Last-Event-ID": "0"}) as response:
            reader = SseReader(response)
            changes = [reader.next().json() for _ in range(3)]

    messages = first + rest
    assert [m.id for m in messages] == [*map(str, range(1, 10)), None]
    assert [m.json()["message"] for m in messages[:-1]] == [*(f"p{n}" for n in range(1, 9)), "all done"]
    assert messages[-1].json() == {"task_id": "t1", "status": "completed"}
    assert [(c["position"], c["kind"], c["status_text"]) for c in changes] == [
        (1, "created", "queued"),
        (2, "status", "running"),
        (3, "status", "completed"),
    ]
