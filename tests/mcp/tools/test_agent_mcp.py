"""An agent given a real MCP server (the SDK's, over stdio): its tools offered, journaled and guarded."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent, InputError, MCPServer, Runtime, Task, TaskStatus, WaitReason
from ratchet.records import Operation, OpStatus

from ...agent.support import GUARD, events_of, model_ops, request_messages
from ...helpers.scripts import calls
from .support import QUICK_RETRY, SERVER, log_lines, one_call_script, stdio_server

INSTRUCTION = "Look after the shop's records."


async def run(rt: Runtime, agent: Agent, **options: Any) -> Task:
    return await asyncio.wait_for(rt.run(agent, instruction=INSTRUCTION, **options), GUARD)


def tool_replies(op: Operation) -> list[str]:
    """What the tool messages of a journaled act request said."""
    return [str(m["content"]) for m in request_messages(op) if m["role"] == "tool"]


async def test_a_read_only_tool_runs_without_approval_and_the_model_sees_its_result(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    agent = Agent("shop", model=model, mcp=[stdio_server(server_log)])
    async with Runtime(url) as rt:
        task = await run(rt, agent)
        assert task.status is TaskStatus.COMPLETED, task.error
        acts = await model_ops(rt.store, task.id, "act")
        offered = {t["name"]: t for t in acts[0].input["tools"]}
        assert offered["lookup"]["description"] == "The value stored under a key."
        assert offered["lookup"]["parameters"]["required"] == ["key"]  # the schema as the server declares it
        assert "value of k1" in tool_replies(acts[1])
        ops = [op for op in await rt.store.list_ops(task.id) if op.name == "lookup"]
        assert [(op.status, op.output) for op in ops] == [(OpStatus.SUCCEEDED, "value of k1")]
    assert log_lines(server_log) == ["start", "lookup k1"]


async def test_a_destructive_tool_waits_for_approval_and_runs_once_after_it(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "delete_record", {"key": "k1"})
    agent = Agent("shop", model=model, mcp=[stdio_server(server_log)])
    async with Runtime(url) as rt:
        task = await run(rt, agent)
        assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
        assert log_lines(server_log) == ["start"]  # listed, not called
        await rt.approve(task.id)
        task = await asyncio.wait_for(rt.resume(task.id), GUARD)
        assert task.status is TaskStatus.COMPLETED, task.error
        listings = [op for op in await rt.store.list_ops(task.id) if op.name.startswith("mcp_list_tools")]
        assert len(listings) == 1  # the resume replayed the listing
    # The resume connected once, for the live call; the listing came from the journal.
    assert log_lines(server_log) == ["start", "start", "delete_record k1"]


async def test_an_unannotated_tool_waits_for_approval_too(url: str, tmp_path: Path, server_log: Path) -> None:
    model = one_call_script(tmp_path / "s.json", "send_mail", {"to": "ops"})
    agent = Agent("shop", model=model, mcp=[stdio_server(server_log)])
    async with Runtime(url) as rt:
        task = await run(rt, agent)
        assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
        approvals = await rt.store.list_approvals(task.id, pending_only=True)
        assert [(a.tool, a.arguments) for a in approvals] == [("send_mail", {"to": "ops"})]


async def test_a_per_tool_override_beats_the_annotations(url: str, tmp_path: Path, server_log: Path) -> None:
    model = one_call_script(tmp_path / "s.json", "delete_record", {"key": "k1"})
    server = stdio_server(server_log, risk={"delete_record": "read_only", "lookup": "external_action"})
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[server]))
        assert task.status is TaskStatus.COMPLETED, task.error
        [offered] = await events_of(rt.store, task.id, "mcp_tools")
        assert offered.data["tools"] == {
            "lookup": "external_action",  # overridden
            "delete_record": "read_only",  # overridden
            "tag_record": "idempotent",
            "send_mail": "external_action",  # no hint
            "broken": "read_only",
            "charge": "external_action",
            "audit": "read_only",
        }
        model = one_call_script(tmp_path / "t.json", "lookup", {"key": "k2"})
        task = await run(rt, Agent("shop", model=model, mcp=[server]))
        assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.APPROVAL)
    assert "delete_record k1" in log_lines(server_log)
    assert "lookup k2" not in log_lines(server_log)


async def test_a_tool_error_is_what_the_model_hears(url: str, tmp_path: Path, server_log: Path) -> None:
    model = one_call_script(tmp_path / "s.json", "broken", {"key": "k9"})
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[stdio_server(server_log)]))
        assert task.status is TaskStatus.COMPLETED, task.error
        acts = await model_ops(rt.store, task.id, "act")
        [reply] = tool_replies(acts[1])
        assert reply.startswith("error: MCPToolError:") and "no record k9" in reply
    assert log_lines(server_log).count("broken k9") == 1  # an error the tool answered is not retried


async def test_arguments_that_do_not_fit_the_schema_never_reach_the_server(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": 7})
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[stdio_server(server_log)]))
        acts = await model_ops(rt.store, task.id, "act")
        [reply] = tool_replies(acts[1])
        assert "bad arguments for lookup: key: 7 is not of type 'string'" in reply
    assert log_lines(server_log) == ["start"]


async def test_a_name_taken_by_another_server_is_refused_and_a_prefix_keeps_them_apart(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "b_lookup", {"key": "k1"})
    async with Runtime(url) as rt:
        twice = Agent("shop", model=model, mcp=[stdio_server(server_log), stdio_server(server_log)])
        task = await run(rt, twice)
        assert task.status is TaskStatus.FAILED
        assert "offers a tool named 'lookup', the name of a tool of MCP server" in (task.error or "")
        servers = [stdio_server(server_log), stdio_server(server_log, prefix="b")]
        apart = Agent("shop", model=model, mcp=servers)
        task = await run(rt, apart)
        assert task.status is TaskStatus.COMPLETED, task.error
    assert "lookup k1" in log_lines(server_log)


async def test_a_risk_override_naming_no_tool_fails_the_task(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    server = stdio_server(server_log, risk={"lookpu": "read_only"})
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[server]))
    assert task.status is TaskStatus.FAILED
    assert "the risk override for 'lookpu' names no tool" in (task.error or "")


def test_a_spec_that_is_neither_a_command_nor_a_url_is_refused() -> None:
    with pytest.raises(InputError, match="is not an http:// or https:// URL"):
        Agent("shop", mcp=["ftp://example.org/mcp"])
    with pytest.raises(InputError, match="does not parse"):
        Agent("shop", mcp=['server "unclosed'])


async def test_a_resume_replays_recorded_calls_without_reconnecting(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    ask = calls(("ask_user", {"question": "Which record next?"}))
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"}, ask)
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[stdio_server(server_log)]))
        assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)
        await rt.answer(task.id, "none")
        task = await asyncio.wait_for(rt.resume(task.id), GUARD)
        assert task.status is TaskStatus.COMPLETED, task.error
    assert log_lines(server_log) == ["start", "lookup k1"]  # the resume needed no server


async def test_a_server_that_cannot_be_reached_is_retried_then_fails_the_task_naming_it(
    url: str, tmp_path: Path, unused_tcp_port: int
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k1"})
    address = f"http://127.0.0.1:{unused_tcp_port}/mcp"
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[MCPServer(address, retry=QUICK_RETRY)]))
        assert task.status is TaskStatus.FAILED
        assert task.error == (
            "MCPServerUnreachable: an MCP server's tools could not be listed after 2 attempt(s): "
            f"MCP server '{address}' could not be reached: ConnectError: All connection attempts failed"
        )
        assert len(await events_of(rt.store, task.id, "retry")) == 1


async def test_a_call_that_cannot_reach_its_server_is_retried_then_the_model_hears_why(
    url: str, tmp_path: Path, server_log: Path
) -> None:
    model = one_call_script(tmp_path / "s.json", "delete_record", {"key": "k1"})
    agent = Agent("shop", model=model, mcp=[stdio_server(server_log, retry=QUICK_RETRY)])
    async with Runtime(url) as rt:
        task = await run(rt, agent)
        assert task.waiting_on is WaitReason.APPROVAL
        server_log.with_suffix(".down").touch()  # the server goes away while a person decides
        await rt.approve(task.id)
        task = await asyncio.wait_for(rt.resume(task.id), GUARD)
        assert task.status is TaskStatus.COMPLETED, task.error
        acts = await model_ops(rt.store, task.id, "act")
        [reply] = tool_replies(acts[1])
        assert reply.startswith("error: MCPServerUnreachable: MCP server ")
        assert "could not be reached" in reply
        [failed] = await events_of(rt.store, task.id, "tool_failed")
        assert "delete_record" in failed.message
        assert len(await events_of(rt.store, task.id, "retry")) == 1
    assert "delete_record k1" not in log_lines(server_log)


@pytest.fixture
def http_server(server_log: Path, unused_tcp_port: int) -> Iterator[str]:
    """The test server over streamable HTTP, as a subprocess: its URL."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER), str(server_log), "--http", str(unused_tcp_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", unused_tcp_port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{unused_tcp_port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_server_over_streamable_http_serves_its_tools(
    url: str, tmp_path: Path, server_log: Path, http_server: str
) -> None:
    model = one_call_script(tmp_path / "s.json", "lookup", {"key": "k3"})
    async with Runtime(url) as rt:
        task = await run(rt, Agent("shop", model=model, mcp=[http_server]))
        assert task.status is TaskStatus.COMPLETED, task.error
        recorded: Any = (await rt.store.get_task(task.id)).inputs_params["agent"]
        assert recorded["mcp"][0]["url"] == http_server
        acts = await model_ops(rt.store, task.id, "act")
        assert "value of k3" in tool_replies(acts[1])
    assert log_lines(server_log) == ["start", "lookup k3"]
