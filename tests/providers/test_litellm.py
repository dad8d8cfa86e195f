"""LiteLLMModel against a real OpenAI-protocol server on loopback, reached through LiteLLM.

``litellm:openai/test-model`` with the server as its base URL: LiteLLM does
the HTTP for real; nothing leaves the machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ratchet.providers import ModelError, ModelProvider, ModelRequest, Purpose, ToolCall, Usage, resolve_model
from ratchet.providers.litellm import LiteLLMModel

from ..helpers.loopback import LoopbackServer, Reply, closed_port
from .test_openai_compat import ACT, CHECK_STATUS, PLAN, completion, error_body, function_call

# The test extra brings LiteLLM: without it these fail, naming it (never a silent skip). Not imported
# here: importing LiteLLM before the provider does would fetch its price table.
if importlib.util.find_spec("litellm") is None:
    pytest.fail("the LiteLLM tests need the [litellm] extra: pip install -e '.[test]'", pytrace=False)


def model_at(server: LoopbackServer, **options: float) -> LiteLLMModel:
    return LiteLLMModel("openai/test-model", base_url=f"{server.url}/v1", api_key="sk-test", **options)


async def failure(model: LiteLLMModel) -> ModelError:
    with pytest.raises(ModelError) as raised:
        await model.complete(ACT, ordinal=0)
    return raised.value


async def test_a_plain_answer_and_its_usage(server: LoopbackServer) -> None:
    server.answer(Reply(completion("X is healthy.")))
    model = model_at(server)
    assert isinstance(model, ModelProvider)

    response = await model.complete(ACT, ordinal=2)

    assert (response.content, response.ordinal) == ("X is healthy.", 2)
    assert (response.provider, response.model) == ("litellm", "openai/test-model")  # for pricing
    assert (response.response_id, response.finish_reason) == ("chatcmpl-1", "stop")  # for its span
    assert response.usage == Usage(prompt_tokens=11, completion_tokens=7)
    sent = server.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["model"] == "test-model"
    assert sent.body["messages"][1] == {"role": "user", "content": "Is X healthy?"}


async def test_tool_calls_and_a_json_plan(server: LoopbackServer) -> None:
    server.answer(
        Reply(completion(None, [function_call("call_a", "check_status", '{"service": "X"}')])),
        Reply(completion(json.dumps(PLAN))),
    )
    model = model_at(server)
    acting = ModelRequest(purpose=Purpose.ACT, messages=ACT.messages, tools=[CHECK_STATUS])

    called = await model.complete(acting, ordinal=0)
    planned = await model.complete(
        ModelRequest(purpose=Purpose.PLAN, messages=ACT.messages, json_output=True), ordinal=0
    )

    assert called.tool_calls == [ToolCall(id="call_a", name="check_status", arguments={"service": "X"})]
    assert server.received[0].body["tools"] == [{"type": "function", "function": CHECK_STATUS}]
    assert planned.content == PLAN
    assert server.received[1].body["response_format"] == {"type": "json_object"}


async def test_a_rate_limit_is_retryable_after_the_wait_asked_for(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("Rate limit reached"), status=429, headers={"Retry-After": "3"}))
    error = await failure(model_at(server))
    assert (error.status, error.retryable, error.retry_after) == (429, True, 3.0)
    assert error.message == "litellm:openai/test-model: HTTP 429: Rate limit reached"
    assert len(server.received) == 1, "LiteLLM must not retry on its own"


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_a_server_error_is_retryable(server: LoopbackServer, status: int) -> None:
    server.answer(Reply(error_body("The server had an error"), status=status))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (status, True)
    assert "The server had an error" in error.message
    assert len(server.received) == 1


@pytest.mark.parametrize("status", [400, 401, 403])
async def test_a_client_error_is_fatal(server: LoopbackServer, status: int) -> None:
    server.answer(Reply(error_body(f"refused with {status}"), status=status))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (status, False)
    assert f"HTTP {status}: refused with {status}" in error.message


async def test_a_prompt_too_long_is_fatal(server: LoopbackServer) -> None:
    server.answer(
        Reply(
            error_body("This model's maximum context length is 8192 tokens.", "context_length_exceeded"),
            status=400,
        )
    )
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (400, False)
    assert "does not fit the model's context" in error.message


async def test_an_unknown_model_is_fatal_in_one_line(server: LoopbackServer) -> None:
    server.answer(Reply(error_body("The model `test-model` does not exist", "model_not_found"), status=404))
    error = await failure(model_at(server))
    assert (error.status, error.retryable) == (404, False)
    assert "the server has no model 'openai/test-model'" in error.message
    assert "\n" not in error.message


async def test_a_timeout_is_retryable(server: LoopbackServer) -> None:
    server.answer(Reply(completion("too late"), delay=1.5))
    error = await failure(model_at(server, timeout=0.3))
    assert (error.status, error.retryable) == (None, True)
    assert f"{server.url}/v1" in error.message


async def test_an_unreachable_server_is_retryable_and_named() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    error = await failure(LiteLLMModel("openai/test-model", base_url=url, api_key="sk-test"))
    assert (error.status, error.retryable) == (None, True)
    assert error.message.startswith(f"litellm:openai/test-model: cannot reach {url}: ")


def test_litellm_names_resolve_without_importing_litellm() -> None:
    program = (
        "import sys\n"
        "from ratchet.providers import resolve_model\n"
        "model = resolve_model('litellm:gemini/gemini-1.5-pro')\n"
        "print(model.name, 'litellm' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["litellm:gemini/gemini-1.5-pro", "False"], done.stderr
    assert isinstance(resolve_model("litellm:openai/x"), LiteLLMModel)


def test_importing_litellm_makes_no_network_call() -> None:
    # Every proxy variable points at a listener that counts connections: LiteLLM's import
    # (through the provider) must open none (no price table fetched, no telemetry), nor hang.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.1)
        proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
        program = "from ratchet.providers.litellm import _litellm\nprint(_litellm().telemetry)\n"
        env = {**os.environ, "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "ALL_PROXY": proxy, "NO_PROXY": ""}
        env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
        child = subprocess.Popen(
            [sys.executable, "-c", program],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        connections = 0
        deadline = time.monotonic() + 90
        while child.poll() is None and time.monotonic() < deadline:
            try:
                accepted, _ = listener.accept()
            except TimeoutError:
                continue
            accepted.close()
            connections += 1
        child.kill()
        out, err = child.communicate()
    assert child.returncode == 0, err
    assert out.split() == ["False"]
    assert connections == 0
