"""The scripted model: keyed by purpose and ordinal, every entry form, exhaustion, bad files."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from ratchet.agent import Agent
from ratchet.errors import CodeUnavailable, InputError, ScriptNotFound
from ratchet.providers import (
    ModelError,
    ModelProvider,
    ModelRequest,
    Purpose,
    ScriptedModel,
    ToolCall,
    Usage,
)
from ratchet.providers.scripted import Script, portable_model, require_script
from ratchet.trust.code import CodeTrust

ACT = ModelRequest(purpose=Purpose.ACT, messages=[{"role": "user", "content": "x" * 40}])


def write(tmp_path: Path, script: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def model(tmp_path: Path, script: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel(write(tmp_path, script))


def answers(n: int) -> list[dict[str, Any]]:
    return [{"content": f"answer {k}"} for k in range(n)]


# ------------------------------------------------------------------ ordinal keying


async def test_an_ordinal_takes_its_entry_whatever_the_call_order(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": answers(3)})
    for ordinal in (1, 0, 2, 1):
        response = await scripted.complete(ACT, ordinal=ordinal)
        assert response.content == f"answer {ordinal}"
        assert response.ordinal == ordinal


async def test_a_fresh_model_on_the_same_file_continues_at_the_given_ordinal(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, {"act": answers(5)})
    first = ScriptedModel(path)
    assert [(await first.complete(ACT, ordinal=k)).content for k in range(3)] == [
        "answer 0",
        "answer 1",
        "answer 2",
    ]
    resumed = ScriptedModel(path)
    assert (await resumed.complete(ACT, ordinal=3)).content == "answer 3"


async def test_each_purpose_has_its_own_list(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"plan": [{"content": "p0"}], "act": [{"content": "a0"}]})
    assert (await scripted.complete(ModelRequest(purpose=Purpose.PLAN), ordinal=0)).content == "p0"
    assert (await scripted.complete(ACT, ordinal=0)).content == "a0"


async def test_a_negative_ordinal_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ordinal"):
        await model(tmp_path, {}).complete(ACT, ordinal=-1)


def test_it_is_a_model_provider_named_by_its_spec(tmp_path: Path) -> None:
    scripted = model(tmp_path, {})
    assert isinstance(scripted, ModelProvider)
    assert scripted.name == f"scripted:{tmp_path / 'script.json'}"


def test_the_script_has_one_list_per_purpose_and_the_model_it_is_priced_as() -> None:
    assert set(Script.model_fields) == {p.value for p in Purpose} | {"priced_as"}


def test_priced_as_names_a_model_as_provider_colon_name(tmp_path: Path) -> None:
    assert model(tmp_path, {"priced_as": "openai:gpt-4o"}).priced_as == "openai:gpt-4o"
    assert model(tmp_path, {}).priced_as is None
    with pytest.raises(InputError, match="priced_as"):
        model(tmp_path, {"priced_as": "gpt-4o"})


def test_a_relative_path_resolves_against_the_project_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, {})
    monkeypatch.chdir(tmp_path)
    scripted = ScriptedModel("script.json")
    assert scripted.path == tmp_path.resolve() / "script.json"
    assert scripted.name == "scripted:script.json"
    project = tmp_path / "project"
    project.mkdir()
    write(project, {})
    with CodeTrust(root=project.resolve()).enforced():  # a run's project root, not the directory
        assert ScriptedModel("script.json").path == project.resolve() / "script.json"


def test_a_task_records_a_script_relative_to_the_project_root_when_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    inside = write(project / "scripts", {})
    outside = write(tmp_path, {}, "elsewhere.json")
    monkeypatch.chdir(project)
    assert portable_model(f"scripted:{inside}") == "scripted:scripts/script.json"
    assert portable_model("scripted:./scripts/../scripts/script.json") == "scripted:scripts/script.json"
    assert portable_model(f"scripted:{outside}") == f"scripted:{outside.resolve()}"
    assert portable_model("openai:gpt-4o-mini") == "openai:gpt-4o-mini"
    assert Agent(model=f"scripted:{inside}").model == "scripted:scripts/script.json"


# ------------------------------------------------------------------ entry forms


async def test_object_content_is_the_json_answer(tmp_path: Path) -> None:
    plan = {"goal": "g", "steps": [{"step_name": "s"}]}
    scripted = model(tmp_path, {"plan": [{"content": plan}]})
    response = await scripted.complete(ModelRequest(purpose=Purpose.PLAN), ordinal=0)
    assert response.content == plan
    assert response.tool_calls == []


async def test_tool_calls_get_ids_from_ordinal_and_index(tmp_path: Path) -> None:
    calls = [
        {"name": "check_status", "arguments": {"service": "X"}},
        {"name": "restart", "arguments": {"service": "X"}, "id": "mine"},
        {"name": "ping"},
    ]
    scripted = model(tmp_path, {"act": [{"content": "a"}, {"tool_calls": calls}]})
    response = await scripted.complete(ACT, ordinal=1)
    assert response.tool_calls == [
        ToolCall(id="call_1_0", name="check_status", arguments={"service": "X"}),
        ToolCall(id="mine", name="restart", arguments={"service": "X"}),
        ToolCall(id="call_1_2", name="ping", arguments={}),
    ]
    assert response.content is None


async def test_content_may_come_with_tool_calls(tmp_path: Path) -> None:
    entry = {"content": "checking", "tool_calls": [{"name": "ping", "arguments": {}}]}
    response = await model(tmp_path, {"act": [entry]}).complete(ACT, ordinal=0)
    assert response.content == "checking"
    assert [call.name for call in response.tool_calls] == ["ping"]


@pytest.mark.parametrize(
    ("error", "status", "retry_after", "retryable"),
    [
        ({"status": 429, "retry_after": 1}, 429, 1.0, True),
        ({"status": 503}, 503, None, True),
        ({"status": 400, "message": "context too long"}, 400, None, False),
        ({"status": 401}, 401, None, False),
        ({"message": "timed out"}, None, None, True),
    ],
)
async def test_error_entries_raise_model_errors(
    tmp_path: Path,
    error: dict[str, Any],
    status: int | None,
    retry_after: float | None,
    retryable: bool,
) -> None:
    scripted = model(tmp_path, {"act": [{"error": error}, {"content": "after"}]})
    with pytest.raises(ModelError) as raised:
        await scripted.complete(ACT, ordinal=0)
    assert (raised.value.status, raised.value.retry_after) == (status, retry_after)
    assert raised.value.retryable is retryable
    assert error.get("message", "act entry 0") in raised.value.message
    assert (await scripted.complete(ACT, ordinal=1)).content == "after"


async def test_a_delay_waits_before_answering(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": [{"content": "slow", "delay": 0.05}]})
    started = time.monotonic()
    response = await asyncio.wait_for(scripted.complete(ACT, ordinal=0), timeout=5)
    assert 0.045 <= time.monotonic() - started < 2
    assert response.content == "slow"


async def test_a_delay_on_an_error_entry_waits_then_raises(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": [{"error": {"status": 500}, "delay": 0.05}]})
    started = time.monotonic()
    with pytest.raises(ModelError):
        await scripted.complete(ACT, ordinal=0)
    assert time.monotonic() - started >= 0.045


async def test_a_delay_can_be_cancelled(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": [{"content": "never", "delay": 30}]})
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(scripted.complete(ACT, ordinal=0), timeout=0.05)


# ------------------------------------------------------------------ usage


async def test_default_usage_is_a_quarter_of_the_text_lengths(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": [{"content": "y" * 30}]})
    request = ModelRequest(
        purpose=Purpose.ACT,
        messages=[
            {"role": "system", "content": "s" * 10},
            {"role": "user", "content": {"k": "v"}},  # JSON: {"k":"v"}, 9 characters
            {"role": "assistant", "tool_calls": []},
        ],
    )
    usage = (await scripted.complete(request, ordinal=0)).usage
    assert usage.prompt_tokens == (10 + 9) // 4
    answer = json.dumps({"content": "y" * 30, "tool_calls": []}, separators=(",", ":"))
    assert usage.completion_tokens == len(answer) // 4
    assert usage.cost is None  # the engine prices the call (ratchet.pricing)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_default_usage_is_the_same_on_every_call(tmp_path: Path) -> None:
    scripted = model(tmp_path, {"act": [{"tool_calls": [{"name": "ping"}]}]})
    first = await scripted.complete(ACT, ordinal=0)
    again = await ScriptedModel(scripted.path).complete(ACT, ordinal=0)
    assert first.usage == again.usage
    assert first.usage.prompt_tokens == 10
    assert first.usage.completion_tokens > 0


async def test_explicit_usage_is_taken_as_written(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 500, "cost": 0.25}
    scripted = model(tmp_path, {"act": [{"content": "x", "usage": usage}]})
    response = await scripted.complete(ACT, ordinal=0)
    assert response.usage == Usage(prompt_tokens=1000, completion_tokens=500, cost=0.25)
    assert response.usage.total_tokens == 1500


# ------------------------------------------------------------------ exhaustion


@pytest.mark.parametrize("purpose", [p.value for p in Purpose])
async def test_a_request_past_the_end_of_its_list_fails_for_good_naming_purpose_and_ordinal(
    tmp_path: Path, purpose: str
) -> None:
    scripted = model(tmp_path, {purpose: [{"content": "the one answer"}]})
    request = ModelRequest(purpose=Purpose(purpose), messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ModelError) as raised:
        await scripted.complete(request, ordinal=1)
    assert str(raised.value) == (
        f"scripted model script.json: no {purpose} answer left for {purpose} request 2 (ordinal 1): "
        f"the script's {purpose!r} list has 1 entry"
    )
    assert (raised.value.status, raised.value.retryable) == (None, False)


async def test_an_absent_list_is_an_empty_one(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"no verify answer left for verify request 1 \(ordinal 0\)"):
        await model(tmp_path, {"act": answers(1)}).complete(ModelRequest(purpose=Purpose.VERIFY), ordinal=0)


# ------------------------------------------------------------------ bad script files


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no script file at .*nowhere\.json"):
        ScriptedModel(tmp_path / "nowhere.json")


def test_a_missing_script_is_missing_as_code_is(tmp_path: Path) -> None:
    """A task whose script is missing waits for it (``waiting(code)``), as for missing tool code."""
    with pytest.raises(CodeUnavailable, match=r"no script file at .*nowhere\.json"):
        ScriptedModel(tmp_path / "nowhere.json")
    with pytest.raises(ScriptNotFound, match=f"no script file at {tmp_path / 'nowhere.json'}$"):
        require_script(f"scripted:{tmp_path / 'nowhere.json'}")
    require_script(f"scripted:{write(tmp_path, {'act': [{'content': 'x'}]})}")  # there: nothing to say
    require_script("openai:gpt-4o-mini")  # reads no file


def test_a_file_that_is_not_json_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('{"act": [', encoding="utf-8")
    with pytest.raises(InputError, match=r"script.json is not valid JSON: .*line 1"):
        ScriptedModel(path)


def test_a_script_that_is_not_an_object_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="must hold a JSON object mapping plan, act"):
        ScriptedModel(write(tmp_path, [{"content": "x"}]))


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ({"acts": []}, "unknown purpose 'acts'; the known purposes are plan, act, verify"),
        ({"act": {"content": "x"}}, "act: Input should be a valid list"),
        ({"act": [{}]}, "act[0]: an entry needs 'content', 'chunks', 'tool_calls' or 'error'"),
        ({"act": [{"delay": 1}]}, "act[0]: an entry needs"),
        ({"act": [{"content": "x", "colour": 1}]}, "act[0].colour: Extra inputs"),
        ({"verify": [{"content": "x", "delay": -1}]}, "verify[0].delay: Input should be greater"),
        (
            {"act": [{"tool_calls": [{"arguments": {}}]}]},
            r"act[0].tool_calls[0].name: Field required",
        ),
        (
            {"act": [{"tool_calls": [{"name": "t", "arguments": [1]}]}]},
            "arguments: Input should be",
        ),
        (
            {"act": [{"error": {"status": 429}, "content": "x"}]},
            "carries only 'error', 'delay', 'chunks' and 'chunk_delay'",
        ),
        ({"act": [{"error": {"status": "soon"}}]}, "act[0].error.status"),
        ({"act": [{}, {}]}, "(and 1 more problems)"),
    ],
)
def test_a_malformed_script_is_one_line_naming_file_and_problem(
    tmp_path: Path, script: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InputError) as raised:
        ScriptedModel(write(tmp_path, script, name="bad.json"))
    message = raised.value.message
    assert "\n" not in message
    assert str(tmp_path / "bad.json") in message
    assert problem in message
