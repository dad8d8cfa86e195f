"""Structured output against real HTTP servers on loopback: each way of asking, the fallbacks, the memory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from ratchet.providers import MalformedAnswer, ModelError, ModelRequest, OutputSchema, Purpose
from ratchet.providers._structured import EndpointFormats
from ratchet.providers._wire import JSON_INSTRUCTION
from ratchet.providers.anthropic import AnthropicModel
from ratchet.providers.openai_compat import OpenAIModel

from ..helpers.loopback import LoopbackServer, Reply
from .test_anthropic import message, text
from .test_openai_compat import completion, error_body


class Verdict(BaseModel):
    passed: bool
    reason: str


VERDICT = {"passed": True, "reason": "X answered"}
SCHEMA = OutputSchema.of(Verdict)
VERIFY = ModelRequest(
    purpose=Purpose.VERIFY,
    messages=[
        {"role": "system", "content": "You check steps."},
        {"role": "user", "content": "Did X answer?"},
    ],
    json_output=True,
    output_schema=SCHEMA,
)
JSON_SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "Verdict", "schema": SCHEMA.json_schema}}
JSON_OBJECT_SCHEMA_FORMAT = {"type": "json_object", "schema": SCHEMA.json_schema}

# How llama-cpp-python's server (FastAPI) refuses a response_format type it does not know.
LLAMA_CPP_PYTHON_REFUSAL = {
    "detail": [
        {
            "type": "literal_error",
            "loc": ["body", "response_format", "type"],
            "msg": "Input should be 'text' or 'json_object'",
            "input": "json_schema",
        }
    ]
}


# How llama-cpp-python's server (0.3.36, as it answered) refuses it: its route's error handler
# catches FastAPI's validation error first and answers HTTP 500, the error written into error.message.
LLAMA_CPP_PYTHON_500 = {
    "error": {
        "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
        "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
        "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \".../llama_cpp/server/app.py\", "
        "line 376, in create_chat_completion\n    POST /v1/chat/completions",
        "type": "internal_server_error",
        "param": None,
        "code": None,
    }
}


def openai_at(server: LoopbackServer, formats: EndpointFormats | None = None) -> OpenAIModel:
    return OpenAIModel("test-model", base_url=f"{server.url}/v1", api_key="sk-test", formats=formats)


def formats_sent(server: LoopbackServer) -> list[Any]:
    return [received.body.get("response_format") for received in server.received]


def test_an_output_schema_is_named_after_its_model_and_safe_for_every_api() -> None:
    assert SCHEMA.name == "Verdict"
    assert SCHEMA.json_schema["required"] == ["passed", "reason"]
    assert OutputSchema.of(Verdict, name="the verdict!").name == "the_verdict_"
    request = ModelRequest.model_validate(
        {"purpose": "verify", "output_schema": {"name": "Verdict", "json_schema": SCHEMA.json_schema}}
    )
    assert request.wants_json and not request.json_output


# --------------------------------------------------------------------------- OpenAI-compatible servers


async def test_a_server_that_takes_json_schema_gets_the_schema_itself(server: LoopbackServer) -> None:
    server.answer(Reply(completion(json.dumps(VERDICT))))

    response = await openai_at(server).complete(VERIFY, ordinal=0)

    assert response.content == VERDICT
    sent = server.last.body
    assert sent["response_format"] == JSON_SCHEMA_FORMAT
    # The server holds the answer to the schema: the prompt does not spell it out.
    assert sent["messages"][0]["content"] == f"You check steps.\n\n{JSON_INSTRUCTION}"


async def test_a_server_taking_only_json_object_with_a_schema_is_remembered(server: LoopbackServer) -> None:
    server.answer(
        Reply(LLAMA_CPP_PYTHON_REFUSAL, status=422),
        Reply(completion(json.dumps(VERDICT))),
        Reply(completion(json.dumps(VERDICT))),
        Reply(completion(json.dumps(VERDICT))),
    )
    formats = EndpointFormats()

    assert (await openai_at(server, formats).complete(VERIFY, ordinal=0)).content == VERDICT
    assert (await openai_at(server, formats).complete(VERIFY, ordinal=1)).content == VERDICT

    # The second request (from another provider object, as the next task builds) goes straight there.
    assert formats_sent(server) == [JSON_SCHEMA_FORMAT, JSON_OBJECT_SCHEMA_FORMAT, JSON_OBJECT_SCHEMA_FORMAT]
    assert formats.refused((f"{server.url}/v1", "test-model")) == {"json_schema"}
    # Another model on the same server is another endpoint: it is tried afresh.
    other = OpenAIModel("other-model", base_url=f"{server.url}/v1", api_key="sk-test", formats=formats)
    await other.complete(VERIFY, ordinal=0)
    assert formats_sent(server)[-1] == JSON_SCHEMA_FORMAT


async def test_a_500_naming_response_format_is_a_refusal_and_is_remembered(server: LoopbackServer) -> None:
    server.answer(
        Reply(LLAMA_CPP_PYTHON_500, status=500),
        Reply(completion(json.dumps(VERDICT))),
        Reply(completion(json.dumps(VERDICT))),
    )
    formats = EndpointFormats()

    assert (await openai_at(server, formats).complete(VERIFY, ordinal=0)).content == VERDICT
    assert (await openai_at(server, formats).complete(VERIFY, ordinal=1)).content == VERDICT

    assert formats_sent(server) == [JSON_SCHEMA_FORMAT, JSON_OBJECT_SCHEMA_FORMAT, JSON_OBJECT_SCHEMA_FORMAT]
    assert formats.refused((f"{server.url}/v1", "test-model")) == {"json_schema"}


@pytest.mark.parametrize(
    "refusal",
    [
        Reply(error_body("Unknown parameter: 'response_format'."), status=400),
        Reply(
            {"detail": [{"loc": ["body", "response_format"], "msg": "Extra inputs are not permitted"}]},
            status=422,
        ),
        Reply({"error": {"message": "1 validation error: {'loc': ('body', 'response_format')}"}}, status=500),
        Reply(error_body("json_schema is not supported by this server"), status=400),
    ],
    ids=["400-openai-error", "422-validation-detail", "500-validation-message", "400-naming-json_schema"],
)
async def test_a_server_refusing_every_response_format_is_asked_in_the_prompt(
    server: LoopbackServer, refusal: Reply
) -> None:
    server.answer(
        refusal,
        refusal,
        refusal,
        Reply(completion(json.dumps(VERDICT))),
        Reply(completion(json.dumps(VERDICT))),
    )
    model = openai_at(server, EndpointFormats())

    assert (await model.complete(VERIFY, ordinal=0)).content == VERDICT
    assert (await model.complete(VERIFY, ordinal=1)).content == VERDICT

    assert formats_sent(server) == [
        JSON_SCHEMA_FORMAT,
        JSON_OBJECT_SCHEMA_FORMAT,
        {"type": "json_object"},
        None,
        None,
    ]
    # Without a response_format, the prompt carries the schema.
    system = server.last.body["messages"][0]["content"]
    assert JSON_INSTRUCTION in system and '"passed":{"title":"Passed","type":"boolean"}' in system


async def test_a_json_mode_refusal_does_not_stop_a_later_schema(server: LoopbackServer) -> None:
    server.answer(
        Reply({"error": "'response_format.type' must be 'json_schema' or 'text'"}, status=400),
        Reply(completion(json.dumps(VERDICT))),
        Reply(completion(json.dumps(VERDICT))),
    )
    model = openai_at(server, EndpointFormats())
    plain_json = VERIFY.model_copy(update={"output_schema": None})

    await model.complete(plain_json, ordinal=0)
    await model.complete(VERIFY, ordinal=1)

    # LM Studio refuses json_object but takes json_schema.
    assert formats_sent(server) == [{"type": "json_object"}, None, JSON_SCHEMA_FORMAT]


async def test_another_client_error_is_not_taken_for_a_refusal(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("Invalid API key"), status=401))
    formats = EndpointFormats()

    with pytest.raises(ModelError, match="Invalid API key"):
        await openai_at(server, formats).complete(VERIFY, ordinal=0)

    assert len(server.received) == 1
    assert formats.refused((f"{server.url}/v1", "test-model")) == frozenset()


async def test_a_500_naming_no_parameter_is_a_server_error_and_nothing_is_remembered(
    server: LoopbackServer,
) -> None:
    server.answer(Reply(error_body("CUDA out of memory while decoding"), status=500))
    formats = EndpointFormats()

    with pytest.raises(ModelError) as raised:
        await openai_at(server, formats).complete(VERIFY, ordinal=0)

    # Retryable, as every 5xx: the retry middleware tries again, with the same response_format.
    assert (raised.value.status, raised.value.retryable) == (500, True)
    assert "CUDA out of memory" in str(raised.value)
    assert formats_sent(server) == [JSON_SCHEMA_FORMAT]
    assert formats.refused((f"{server.url}/v1", "test-model")) == frozenset()


async def test_a_parameter_named_inside_a_longer_word_is_not_a_refusal(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("my_response_format_proxy crashed"), status=502))

    with pytest.raises(ModelError, match="HTTP 502"):
        await openai_at(server, EndpointFormats()).complete(VERIFY, ordinal=0)

    assert len(server.received) == 1


async def test_a_refusal_to_answer_is_a_malformed_answer(server: LoopbackServer) -> None:
    answer = completion(None)
    answer["choices"][0]["message"]["refusal"] = "I can't help with that."
    server.answer(Reply(answer))

    with pytest.raises(MalformedAnswer, match="refused to answer: I can't help with that"):
        await openai_at(server).complete(VERIFY, ordinal=0)


# --------------------------------------------------------------------------- Anthropic


def anthropic_at(server: LoopbackServer, formats: EndpointFormats) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=server.url, formats=formats)


def tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}


async def test_anthropic_answers_through_a_forced_tool(server: LoopbackServer) -> None:
    server.answer(Reply(message(tool_use("Verdict", VERDICT), stop_reason="tool_use")))

    response = await anthropic_at(server, EndpointFormats()).complete(VERIFY, ordinal=0)

    assert response.content == VERDICT
    assert response.tool_calls == []
    sent = server.last.body
    assert sent["tools"] == [
        {
            "name": "Verdict",
            "description": "Give your answer: its input is the whole answer, in the shape asked for.",
            "input_schema": SCHEMA.json_schema,
        }
    ]
    assert sent["tool_choice"] == {"type": "tool", "name": "Verdict"}
    assert sent["system"] == "You check steps."


async def test_anthropic_without_an_answer_through_the_tool_is_malformed(server: LoopbackServer) -> None:
    server.answer(Reply(message(text("It passed."))))

    with pytest.raises(MalformedAnswer, match="through the tool 'Verdict' but gave no answer"):
        await anthropic_at(server, EndpointFormats()).complete(VERIFY, ordinal=0)


async def test_a_server_refusing_the_forced_tool_is_asked_in_the_prompt_from_then_on(
    server: LoopbackServer,
) -> None:
    refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": "tool_choice: unknown"}}
    server.answer(
        Reply(refusal, status=400),
        Reply(message(text(json.dumps(VERDICT)))),
        Reply(message(text(json.dumps(VERDICT)))),
    )
    formats = EndpointFormats()

    assert (await anthropic_at(server, formats).complete(VERIFY, ordinal=0)).content == VERDICT
    assert (await anthropic_at(server, formats).complete(VERIFY, ordinal=1)).content == VERDICT

    assert ["tool_choice" in received.body for received in server.received] == [True, False, False]


async def test_anthropic_refusing_the_forced_tool_with_a_500_is_asked_in_the_prompt(
    server: LoopbackServer,
) -> None:
    refusal = {"type": "error", "error": {"type": "api_error", "message": "unsupported field: tool_choice"}}
    server.answer(Reply(refusal, status=500), Reply(message(text(json.dumps(VERDICT)))))
    formats = EndpointFormats()

    assert (await anthropic_at(server, formats).complete(VERIFY, ordinal=0)).content == VERDICT

    assert ["tool_choice" in received.body for received in server.received] == [True, False]
    assert formats.refused((server.url, "claude-test")) == {"forced_tool"}
    assert server.last.body["system"].startswith(f"You check steps.\n\n{JSON_INSTRUCTION} ")
    assert '"reason":{"title":"Reason","type":"string"}' in server.last.body["system"]
