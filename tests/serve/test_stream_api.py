"""``GET /api/tasks/{id}/stream``: a task's stream over Server-Sent Events, from a real uvicorn server.

The test writes the stream through the server's own store (as the engine
does while a worker runs the task) while a client follows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from starlette.testclient import TestClient

from ratchet.records import StreamEntry
from ratchet.runtime.streams import attempts
from ratchet.serve import create_app
from ratchet.trust.tokens import load_tokens

from ..helpers.stream_entries import STORY_ANSWER, finish_task, new_task, start_task, stopped, story
from .live_server import Message, SseReader, serve_live
from .support import BASE

TIMEOUT = 60.0


def test_a_stream_dropped_and_resumed_by_last_event_id_gives_every_entry_once_in_order(url: str) -> None:
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        task_id = served.run(new_task(served.store))
        served.run(start_task(served.store, task_id))
        batches = story(task_id)
        for batch in batches[:2]:
            served.run(served.store.append_stream(task_id, batch))
        stream_url = f"/api/tasks/{task_id}/stream"
        with client.stream("GET", stream_url) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            reader = SseReader(response)
            first = [reader.next() for _ in range(3)]
            served.run(served.store.append_stream(task_id, batches[2]))  # written while it is read
            first += [reader.next() for _ in range(2)]
        # Dropped mid-answer; the task writes on meanwhile.
        for batch in batches[3:6]:
            served.run(served.store.append_stream(task_id, batch))
        last_id = first[-1].id
        assert last_id == "4"
        with client.stream("GET", stream_url, headers={"Last-Event-ID": last_id}) as response:
            reader = SseReader(response)
            rest = [reader.next() for _ in range(4)]
            for batch in batches[6:]:
                served.run(served.store.append_stream(task_id, batch))
            served.run(finish_task(served.store, task_id))
            rest += reader.until("done")

    messages = first + rest[:-1]
    every = [entry for batch in batches for entry in batch]
    assert [m.id for m in messages] == [str(offset) for offset in range(len(every))]
    assert [m.event for m in messages] == [str(e.kind) for e in every]
    assert [(m.json()["offset"], m.json()["value"]) for m in messages] == list(
        enumerate(e.value for e in every)
    )
    # The attempts stay apart: the cut one's pieces, its end naming where it was cut, then the
    # resuming run's attempt with the same number, marked restarted.
    marks = [m.json() for m in messages if m.event in ("attempt", "end")]
    assert [(m["kind"], m["seq"], m["attempt"], m["value"]) for m in marks[:3]] == [
        ("attempt", 3, 1, {}),
        ("end", 3, 1, {"outcome": "interrupted", "cut_at": 2}),
        ("attempt", 3, 1, {"restarted": True, "cut_at": 2}),
    ]
    got = [StreamEntry.model_validate(m.json()) for m in messages]
    assert [(a.seq, a.attempt, a.outcome, a.restarted, a.text) for a in attempts(got)] == [
        (3, 1, "interrupted", False, "The answer is 4"),
        (3, 1, "succeeded", True, STORY_ANSWER),
        (7, 1, "succeeded", False, "Second call."),
    ]
    assert rest[-1].event == "done" and rest[-1].id is None
    assert rest[-1].json() == {"task_id": task_id, "status": "completed"}


def test_a_stopped_attempt_and_a_failed_one_come_with_the_marks_that_say_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        task_id = served.run(new_task(served.store))
        for batch in stopped(task_id):
            served.run(served.store.append_stream(task_id, batch))
        served.run(finish_task(served.store, task_id))
        messages = _read_all(client, f"/api/tasks/{task_id}/stream")[:-1]

    ends = [m.json()["value"] for m in messages if m.event == "end"]
    assert ends == [
        {"outcome": "interrupted"},
        {"outcome": "failed", "error_type": "ModelUnavailable", "dropped": 1},
        {"outcome": "succeeded"},
    ]
    got = [StreamEntry.model_validate(m.json()) for m in messages]
    assert [(a.attempt, a.outcome, a.restarted, a.text) for a in attempts(got)] == [
        (1, "interrupted", False, "Half an ans"),
        (1, "failed", True, "An ans"),
        (2, "succeeded", False, "The answer."),
    ]


def _read_all(client: httpx.Client, path: str, headers: dict[str, str] | None = None) -> list[Message]:
    with client.stream("GET", path, headers=headers or {}) as response:
        assert response.status_code == 200, response.read()
        return SseReader(response).until("done")


def test_from_starts_at_an_offset_the_header_wins_and_an_ended_task_stream_ends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        task_id = served.run(new_task(served.store))
        for batch in story(task_id):
            served.run(served.store.append_stream(task_id, batch))
        served.run(finish_task(served.store, task_id))
        path = f"/api/tasks/{task_id}/stream"
        every = _read_all(client, path)
        from_two = _read_all(client, f"{path}?from=2")
        # A reconnecting EventSource sends the last id it got: it goes on at the next offset.
        resumed = _read_all(client, f"{path}?from=1", headers={"Last-Event-ID": "4"})
        past_the_end = _read_all(client, f"{path}?from=99")

    assert [m.id for m in every[:-1]] == [str(offset) for offset in range(14)]
    assert [m.id for m in from_two] == [m.id for m in every[2:]]
    assert [m.id for m in resumed] == [m.id for m in every[5:]]
    assert [m.event for m in past_the_end] == ["done"]
    # The entries as `ratchet stream --json` prints them.
    assert json.loads(every[0].data) == every[0].json()
    assert set(every[0].json()) == {
        "task_id",
        "offset",
        "kind",
        "seq",
        "attempt",
        "key",
        "value",
        "written_at",
    }


def test_an_unknown_task_is_404_and_a_bad_offset_400_each_with_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    with serve_live(url) as served, httpx.Client(base_url=served.base, timeout=TIMEOUT) as client:
        task_id = served.run(new_task(served.store))
        missing = client.get("/api/tasks/nope/stream")
        negative = client.get(f"/api/tasks/{task_id}/stream?from=-1")
        words = client.get(f"/api/tasks/{task_id}/stream?from=ten")
        too_big = client.get(f"/api/tasks/{task_id}/stream?from=" + "9" * 30)
        bad_header = client.get(f"/api/tasks/{task_id}/stream", headers={"Last-Event-ID": "x"})
    assert missing.status_code == 404
    assert missing.json() == {"detail": "no task has the id 'nope'"}
    for response in (negative, words, too_big, bad_header):
        assert response.status_code == 400
        [detail] = response.json().values()
        assert "\n" not in detail and "whole number" in detail
    assert negative.json()["detail"].startswith("from must be the offset")
    assert "Last-Event-ID" in bad_header.json()["detail"]


def test_the_route_is_in_the_api_and_its_schema_and_needs_the_token_the_api_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'served.db'}"
    with serve_live(url) as served:  # a task that wrote its stream and ended
        task_id = served.run(new_task(served.store))
        served.run(served.store.append_stream(task_id, story(task_id)[0]))
        served.run(finish_task(served.store, task_id))
    (tmp_path / "tokens").write_text("s3cret-token\n")
    app = create_app(url, tokens=load_tokens(tmp_path / "tokens"))
    bearer = {"authorization": "Bearer s3cret-token"}
    with TestClient(app, base_url=BASE) as client:
        schema = client.get("/api/openapi.json", headers=bearer).json()
        missing = client.get("/api/tasks/nope/stream", headers=bearer)
        without_token = client.get(f"/api/tasks/{task_id}/stream")
        whole = client.get(f"/api/tasks/{task_id}/stream", headers=bearer)
    operation = schema["paths"]["/api/tasks/{task_id}/stream"]["get"]
    assert operation["tags"] == ["live"]
    assert {p["name"] for p in operation["parameters"]} == {"task_id", "from", "Last-Event-ID"}
    assert set(operation["responses"]) >= {"200", "400", "404"}
    assert missing.status_code == 404
    assert without_token.status_code == 401
    assert whole.status_code == 200 and whole.headers["x-accel-buffering"] == "no"
    assert [line for line in whole.text.splitlines() if line.startswith("event:")] == [
        "event: attempt",
        "event: text",
        "event: done",
    ]
