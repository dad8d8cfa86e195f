"""Two agents share tasks through `ratchet mcp`, each a real SDK client of a server subprocess.

Over stdio each agent has its own server (``--agent``); over streamable HTTP
each client sends its own bearer token, which names its agent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp_types import CallToolResult

from ratchet import Agent, Runtime
from ratchet.records import TaskStatus, WaitReason

from ...helpers.scripts import calls, plan, say, verdict
from .support import connect, document, mcp_command

TOKENS = {"alpha": "token-of-alpha-0123456789", "beta": "token-of-beta-9876543210"}
CAUSE = {"ops": [{"op": "append_facts", "facts": [{"key": "cause", "value": "disk full on db-1"}]}]}
OWNED_BY_ALPHA = "belongs to agent alpha"

MAIL_TOOLS = """
import ratchet


@ratchet.tool(risk="external_action")
def send_mail(to: str, body: str) -> str:
    return f"mail sent to {to}"
"""


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def as_agent(transport: str, store_url: str, agent: str, tmp_path: Path) -> AsyncIterator[Client]:
    """A client acting as `agent`: by ``--agent`` over stdio, by its bearer token over HTTP."""
    if transport == "stdio":
        async with connect("stdio", mcp_command(store_url, "--agent", agent)) as client:
            yield client
        return
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{name} {token}\n" for name, token in TOKENS.items()), encoding="utf-8")
    command = mcp_command(store_url, "--token-file", str(tokens))
    async with connect("http", command, token=TOKENS[agent]) as client:
        yield client


def result(outcome: CallToolResult) -> dict[str, Any]:
    assert not outcome.is_error, outcome.content
    assert outcome.structured_content is not None
    return dict(outcome.structured_content)


def refusal(outcome: CallToolResult) -> str:
    assert outcome.is_error
    [part] = outcome.content
    message = str(getattr(part, "text", ""))
    assert message
    assert "\n" not in message
    return message


async def facts(client: Client, agent: str, task_id: str) -> list[str]:
    state = document(await client.read_resource(f"state://agents/{agent}/tasks/{task_id}"))
    return [f"{fact['key']}={fact['value']}" for fact in state["state"]["known_facts"]]


async def test_an_agent_writes_another_agents_task_only_once_it_is_handed_off(
    transport: str, url: str, tmp_path: Path
) -> None:
    model = tmp_path / "script.json"
    model.write_text(json.dumps({"plan": [plan("look")], "act": [say("done")]}), encoding="utf-8")
    async with (
        as_agent(transport, url, "alpha", tmp_path) as alpha,
        as_agent(transport, url, "beta", tmp_path) as beta,
    ):
        created = result(
            await alpha.call_tool(
                "create_task", {"instruction": "find why X is slow", "model": f"scripted:{model}"}
            )
        )
        task_id = str(created["task_id"])
        assert created["uri"] == f"state://agents/alpha/tasks/{task_id}"

        refused = refusal(await beta.call_tool("patch_state", {"task_id": task_id, "patch": CAUSE}))
        assert OWNED_BY_ALPHA in refused
        assert "beta" in refused
        assert await facts(beta, "alpha", task_id) == []  # nothing written

        result(
            await alpha.call_tool(
                "handoff", {"task_id": task_id, "to_agent": "beta", "note": "yours: the database side"}
            )
        )
        result(await beta.call_tool("patch_state", {"task_id": task_id, "patch": CAUSE}))

        assert await facts(alpha, "beta", task_id) == ["cause=disk full on db-1"]
        listed = document(await alpha.read_resource("state://agents/beta/tasks"))
        assert task_id in json.dumps(listed)
        with pytest.raises(MCPError, match="beta"):  # its old URI names the agent it left
            await beta.read_resource(f"state://agents/alpha/tasks/{task_id}")
        assert "belongs to agent beta" in refusal(
            await alpha.call_tool("patch_state", {"task_id": task_id, "patch": CAUSE})
        )


async def test_a_second_agent_reads_what_the_first_wrote_and_finishes_the_work(
    url: str, tmp_path: Path
) -> None:
    # Alpha's agent finds the cause, records it, and asks to mail the owners: an external
    # action, so the task waits for approval. Beta reads all of it by URI, takes the task over
    # and approves, and the task runs to its end under beta.
    (tmp_path / "mail_tools.py").write_text(MAIL_TOOLS, encoding="utf-8")
    script = {
        "plan": [plan("diagnose", "tell the owners")],
        "act": [
            calls(("update_state", CAUSE)),
            say("the disk of db-1 is full"),
            calls(("send_mail", {"to": "owners@example.com", "body": "db-1: disk full"})),
            say("owners told"),
        ],
        "verify": [verdict(True), verdict(True)],
    }
    (tmp_path / "script.json").write_text(json.dumps(script), encoding="utf-8")
    agent = Agent(
        "alpha",
        "You keep the services running.",
        model=f"scripted:{tmp_path / 'script.json'}",
        tool_sources=[str(tmp_path / "mail_tools.py")],
    )
    async with Runtime(url, allow_code=[tmp_path]) as runtime:
        task_id = await runtime.submit(agent, instruction="Service X is slow: find out why.")
        first = await runtime.resume(task_id)
        assert first.waiting_on is WaitReason.APPROVAL, first.error

        async with (
            as_agent("stdio", url, "alpha", tmp_path) as alpha,
            as_agent("stdio", url, "beta", tmp_path) as beta,
        ):
            seen = document(await beta.read_resource(f"state://agents/alpha/tasks/{task_id}"))
            assert "cause=disk full on db-1" in await facts(beta, "alpha", task_id)
            assert "send_mail" in json.dumps(seen)  # the call waiting for approval
            assert OWNED_BY_ALPHA in refusal(await beta.call_tool("approve", {"task_id": task_id}))

            result(await alpha.call_tool("handoff", {"task_id": task_id, "to_agent": "beta"}))
            result(await beta.call_tool("approve", {"task_id": task_id}))

        done = await runtime.resume(task_id)
        assert done.status is TaskStatus.COMPLETED, done.error
        assert done.agent == "beta"
        assert [fact.key for fact in done.state.known_facts] == ["cause"]
