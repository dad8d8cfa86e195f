"""Named endpoints: two agents in one process, each on its own OpenAI-compatible server.

The endpoints live in a config file (``RATCHET_CONFIG``); each task records
only ``NAME:MODEL``, and the key only by its variable's name.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.store import StateStore

from ..helpers.loopback import LoopbackServer, chat_completion, closed_port
from .support import make_agent, model_ops, run_agent
from .test_openai_agent import ACT_AND_VERIFY, PLAN


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LoopbackServer, LoopbackServer]]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    with LoopbackServer() as left, LoopbackServer() as right:
        yield left, right


def write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    config = tmp_path / "ratchet.toml"
    config.write_text(text)
    monkeypatch.setenv("RATCHET_CONFIG", str(config))
    return config


async def test_two_agents_in_one_process_each_use_their_own_server(
    store: StateStore,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    left, right = servers
    write_config(
        tmp_path,
        monkeypatch,
        f"""
[endpoints.left]
provider = "openai"
base_url = "{left.url}/v1"
api_key_env = "LEFT_KEY"

[endpoints.right]
provider = "openai"
base_url = "{right.url}/v1"
""",
    )
    monkeypatch.setenv("LEFT_KEY", "sk-left")
    for server in servers:
        server.answer(chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)
    rt = Runtime(store)

    first, second = await asyncio.gather(
        run_agent(rt, make_agent("left:model-a")), run_agent(rt, make_agent("right:model-b"))
    )

    assert (first.status, second.status) == (TaskStatus.COMPLETED, TaskStatus.COMPLETED)
    assert (first.model, second.model) == ("left:model-a", "right:model-b")
    assert {r.body["model"] for r in left.received} == {"model-a"}
    assert {r.body["model"] for r in right.received} == {"model-b"}
    assert len(left.received) == len(right.received) == 4
    assert {r.headers["authorization"] for r in left.received} == {"Bearer sk-left"}
    assert {r.headers["authorization"] for r in right.received} == {"Bearer no-key"}
    stored = json.dumps([op.input for op in await store.list_ops(first.id)])
    assert "sk-left" not in stored and left.url not in (first.model or "")


async def test_an_unreachable_server_is_retried_then_fails_naming_the_url_and_the_cause(
    store: StateStore,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    write_config(tmp_path, monkeypatch, f'[endpoints.down]\nprovider = "openai"\nbase_url = "{url}"\n')

    task = await run_agent(Runtime(store), make_agent("down:model-a"))

    assert task.status is TaskStatus.FAILED
    assert task.error is not None
    assert f"cannot reach {url}" in task.error and "Connection refused" in task.error
    plans = await model_ops(store, task.id, "plan")
    assert [op.attempt for op in plans] == [3]  # the default policy: three attempts, then failed


async def test_an_agent_task_completes_through_litellm_at_a_named_endpoint(
    store: StateStore,
    servers: tuple[LoopbackServer, LoopbackServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if importlib.util.find_spec("litellm") is None:
        pytest.fail("this test needs the [litellm] extra: pip install -e '.[test]'", pytrace=False)
    # Imported here, outside `run_agent`'s guard: LiteLLM takes seconds to import, longer on a busy machine.
    importlib.import_module("litellm")
    server, _ = servers
    write_config(
        tmp_path,
        monkeypatch,
        f'[endpoints.lite]\nprovider = "litellm"\nbase_url = "{server.url}/v1"\napi_key_env = "LITE_KEY"\n',
    )
    monkeypatch.setenv("LITE_KEY", "sk-lite")
    server.answer(chat_completion(json.dumps(PLAN)), *ACT_AND_VERIFY)

    task = await run_agent(Runtime(store), make_agent("lite:openai/model-c"))

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == "X is degraded"
    assert {r.body["model"] for r in server.received} == {"model-c"}
    assert {r.headers["authorization"] for r in server.received} == {"Bearer sk-lite"}
    (plan,) = await model_ops(store, task.id, "plan")
    assert plan.output is not None and plan.output["provider"] == "litellm"
