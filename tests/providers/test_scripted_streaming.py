"""The scripted model streams: its chunks in order, their delay, the join check, a failure midway."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ratchet.errors import InputError
from ratchet.providers import (
    ModelError,
    ModelRequest,
    ModelResponse,
    Purpose,
    ScriptedModel,
    StreamingProvider,
    ToolCall,
)

ACT = ModelRequest(purpose=Purpose.ACT, messages=[{"role": "user", "content": "Is X healthy?"}])


def scripted(tmp_path: Path, *entries: dict[str, Any]) -> ScriptedModel:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"act": list(entries)}), encoding="utf-8")
    return ScriptedModel(path)


class Pieces:
    """An `on_text` sink that keeps what it is handed, in order."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, piece: str) -> None:
        self.seen.append(piece)


async def streamed(model: ScriptedModel, ordinal: int = 0) -> tuple[ModelResponse, list[str]]:
    pieces = Pieces()
    response = await model.complete_streaming(ACT, ordinal=ordinal, on_text=pieces)
    return response, pieces.seen


async def test_the_chunks_arrive_in_order_and_the_answer_is_what_complete_returns(tmp_path: Path) -> None:
    model = scripted(tmp_path, {"content": "X is healthy.", "chunks": ["X ", "is ", "healthy."]})
    assert isinstance(model, StreamingProvider)

    response, pieces = await streamed(model)

    assert pieces == ["X ", "is ", "healthy."]
    assert response == await model.complete(ACT, ordinal=0)
    assert response.content == "X is healthy."


async def test_chunks_alone_are_the_content_joined(tmp_path: Path) -> None:
    model = scripted(tmp_path, {"chunks": ["Let me ", "check."], "tool_calls": [{"name": "ping"}]})

    response, pieces = await streamed(model)

    assert pieces == ["Let me ", "check."]
    assert response.content == "Let me check."
    assert response.tool_calls == [ToolCall(id="call_0_0", name="ping")]
    assert await model.complete(ACT, ordinal=0) == response


async def test_a_text_content_without_chunks_streams_as_one_piece(tmp_path: Path) -> None:
    model = scripted(
        tmp_path, {"content": "whole"}, {"content": {"goal": "g"}}, {"tool_calls": [{"name": "t"}]}
    )

    assert (await streamed(model, 0))[1] == ["whole"]
    json_answer, json_pieces = await streamed(model, 1)
    assert (json_answer.content, json_pieces) == ({"goal": "g"}, [])  # a JSON value is not streamed
    assert (await streamed(model, 2))[1] == []


async def test_the_chunk_delay_comes_before_each_piece(tmp_path: Path) -> None:
    model = scripted(tmp_path, {"chunks": ["one", "two", "three"], "chunk_delay": 30})
    pieces = Pieces()
    call = asyncio.create_task(model.complete_streaming(ACT, ordinal=0, on_text=pieces))
    await asyncio.sleep(0.05)
    # Still asleep before the first piece: nothing is sent yet, and the call can be cut there.
    assert pieces.seen == []
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call


async def test_a_short_chunk_delay_still_delivers_every_piece(tmp_path: Path) -> None:
    model = scripted(tmp_path, {"chunks": ["a", "b"], "chunk_delay": 0.01})
    response, pieces = await streamed(model)
    assert (pieces, response.content) == (["a", "b"], "ab")


async def test_an_error_after_chunks_sends_them_then_fails_retryably(tmp_path: Path) -> None:
    model = scripted(
        tmp_path,
        {"chunks": ["X is ", "hea"], "error": {"message": "stream cut"}},
        {"content": "X is healthy.", "chunks": ["X is ", "healthy."]},
    )
    pieces = Pieces()

    with pytest.raises(ModelError) as raised:
        await model.complete_streaming(ACT, ordinal=0, on_text=pieces)

    assert pieces.seen == ["X is ", "hea"]
    assert (raised.value.status, raised.value.retryable, raised.value.message) == (None, True, "stream cut")
    # The retry is the next ordinal, as the engine counts it: the whole answer this time.
    retried, again = await streamed(model, 1)
    assert (retried.content, again) == ("X is healthy.", ["X is ", "healthy."])
    # Unstreamed, the same entry fails the same way, without pieces.
    with pytest.raises(ModelError, match="stream cut"):
        await model.complete(ACT, ordinal=0)


async def test_an_error_entry_without_chunks_streams_nothing(tmp_path: Path) -> None:
    model = scripted(tmp_path, {"error": {"status": 429, "retry_after": 2}})
    pieces = Pieces()
    with pytest.raises(ModelError) as raised:
        await model.complete_streaming(ACT, ordinal=0, on_text=pieces)
    assert (pieces.seen, raised.value.status, raised.value.retry_after) == ([], 429, 2.0)


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"content": "X is healthy.", "chunks": ["X is ", "ill."]}, "'chunks' join to 'X is ill.', not to"),
        ({"content": {"a": 1}, "chunks": ["{}"]}, "'content' must then be a string"),
        ({"chunks": []}, "act[0].chunks: List should have at least 1 item"),
        ({"chunks": ["a", ""]}, "act[0].chunks[1]: String should have at least 1 character"),
        ({"chunks": ["a"], "chunk_delay": -1}, "act[0].chunk_delay: Input should be greater"),
        ({"tool_calls": [{"name": "t"}], "chunk_delay": 1}, "'chunk_delay' waits before each piece"),
        ({"chunk_delay": 1}, "an entry needs 'content', 'chunks', 'tool_calls' or 'error'"),
        ({"chunks": ["a"], "error": {}, "content": "a"}, "an error entry carries only"),
    ],
)
def test_a_bad_chunked_entry_is_one_line(tmp_path: Path, entry: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError) as raised:
        scripted(tmp_path, entry)
    assert "\n" not in raised.value.message
    assert problem in raised.value.message
