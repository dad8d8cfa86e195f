"""Subscriptions: a client hears each change of a task that a worker in another process runs.

The worker is a real ``ratchet resume`` subprocess (tests/crash/harness.py);
the change reaches `ratchet mcp` through the store's change feed (NOTIFY on
PostgreSQL, a poll on SQLite), never through the worker.
"""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPError

from ratchet.mcp.server import build_server
from ratchet.records import Event, Task
from ratchet.views.uris import events_uri, task_uri

from ...crash.harness import finish_worker, start_task_worker
from ...helpers.stores import opened
from .support import AGENT, UPDATE_WAIT, agent_task, connect, document, mcp_command, write_script

STEP_DELAY = 0.8  # each step's act answer comes this late, so a subscriber sees the steps apart


def progress(doc: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A task document as the test follows it: the task's status, and each step's."""
    return doc["status"], tuple(step["status"] for step in doc["plan"])


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_subscriber_hears_each_step_of_a_task_another_process_runs(
    url: str, transport: str, tmp_path: Path
) -> None:
    task_id = await agent_task(
        url, write_script(tmp_path / "script.json", delay=STEP_DELAY), task_id="t-live"
    )
    uri = task_uri(AGENT, task_id)
    seen: list[tuple[str, tuple[str, ...]]] = []
    updated: list[str] = []

    async with (
        connect(transport, mcp_command(url)) as client,
        client.listen(resource_subscriptions=[uri, events_uri(task_id)]) as subscription,
    ):
        worker = start_task_worker(url, task_id)
        try:
            async with asyncio.timeout(4 * UPDATE_WAIT):
                async for event in subscription:
                    assert isinstance(event, ResourceUpdated)
                    updated.append(event.uri)
                    final = document(await client.read_resource(uri))
                    seen.append(progress(final))
                    if seen[-1][0] == "completed":
                        break
        finally:
            finish_worker(worker)

    assert ("running", ("completed", "current")) in seen  # read while the worker runs: step 1 done
    assert seen[-1] == ("completed", ("completed", "completed"))
    assert set(updated) == {uri, events_uri(task_id)}
    assert final["budget"]["used"]["steps"] == 2
    assert final["budget"]["used"]["llm_tokens"] > 0
    assert final["result"] == "fixed"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_client_of_the_earlier_protocol_subscribes_with_resources_subscribe(
    transport: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = await agent_task(url, write_script(tmp_path / "script.json", delay=STEP_DELAY), task_id="t-old")
    uri = task_uri(AGENT, task_id)
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            await heard.put(message.params.uri)

    async with connect(transport, mcp_command(url), mode="legacy", message_handler=on_message) as client:
        assert client.server_capabilities.resources is not None
        assert client.server_capabilities.resources.subscribe
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is the earlier protocol's, on purpose
            await client.subscribe_resource(uri)
            with pytest.raises(MCPError, match=f"task '{task_id}' belongs to agent 'ops', not 'someone'"):
                await client.subscribe_resource(task_uri("someone", task_id))
        worker = start_task_worker(url, task_id)
        try:
            statuses: list[str] = []
            while not statuses or statuses[-1] != "completed":
                assert await asyncio.wait_for(heard.get(), UPDATE_WAIT) == uri
                statuses.append(document(await client.read_resource(uri))["status"])
        finally:
            finish_worker(worker)

    assert statuses[0] == "running"


async def test_a_change_in_a_store_in_memory_reaches_a_subscriber_in_process() -> None:
    async with opened("memory://") as store:
        await store.create_task(Task(id="t-1", name="fix", instruction="fix X", agent=AGENT))
        async with Client(build_server(store, agent=None)) as client:
            uri = task_uri(AGENT, "t-1")
            wrong = task_uri("someone", "t-1")  # read refuses it: no update names it either
            async with client.listen(resource_subscriptions=[uri, wrong]) as subscription:
                await store.append_event(Event(task_id="t-1", kind="note", message="looked at the logs"))
                async with asyncio.timeout(UPDATE_WAIT):
                    event = await anext(subscription)
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(anext(subscription), 0.5)
                events = document(await client.read_resource(events_uri("t-1")))

    assert event == ResourceUpdated(uri=uri)
    assert [e["message"] for e in events["events"]] == ["looked at the logs"]


async def test_one_stream_watches_at_most_a_hundred_uris() -> None:
    async with opened("memory://") as store, Client(build_server(store, agent=None)) as client:
        with pytest.raises(MCPError, match="101 resource subscriptions in one stream; at most 100"):
            async with client.listen(resource_subscriptions=[task_uri(AGENT, f"t-{n}") for n in range(101)]):
                pass
        async with client.listen(resource_subscriptions=[task_uri(AGENT, "t-1")]) as subscription:
            assert subscription.honored.resource_subscriptions == [task_uri(AGENT, "t-1")]
