"""`ratchet mcp`'s resources, read by the SDK's client: templates, listing, documents, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ratchet.mcp.server import build_server
from ratchet.policy import Budget
from ratchet.records import Approval, Artifact, Step, StepStatus, Task, TaskStatus, WaitReason
from ratchet.views.uris import parse_uri, task_uri

from ...helpers.stores import opened
from .support import AGENT, agent_task, connect, document, mcp_command, text_of, write_script

TEMPLATES = [
    "state://agents/{agent}/tasks/{task}",
    "state://agents/{agent}/tasks",
    "state://tasks/{task}/events",
    "state://tasks/{task}/artifacts/{artifact}",
]


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_a_client_discovers_the_templates_and_the_tasks(
    url: str, transport: str, tmp_path: Path
) -> None:
    task_id = await agent_task(url, write_script(tmp_path / "script.json", delay=0), task_id="t-listed")

    async with connect(transport, mcp_command(url)) as client:
        templates = await client.list_resource_templates()
        listed = await client.list_resources()
        task = document(await client.read_resource(f"state://agents/{AGENT}/tasks/{task_id}"))
        tasks = document(await client.read_resource(f"state://agents/{AGENT}/tasks"))

    assert [t.uri_template for t in templates.resource_templates] == TEMPLATES
    assert {r.uri for r in listed.resources} == {
        f"state://agents/{AGENT}/tasks",
        f"state://agents/{AGENT}/tasks/{task_id}",
        f"state://tasks/{task_id}/events",
    }
    assert (task["task_id"], task["agent"], task["status"], task["waiting_on"]) == (
        task_id,
        AGENT,
        "queued",
        None,
    )
    assert task["instruction"] == "Service X is slow: find out why and fix it."
    assert set(task["state"]) >= {"known_facts", "open_questions", "artifacts", "risk_flags"}
    assert task["budget"]["used"]["steps"] == 0
    assert (task["parent"], task["children"], task["question"], task["pending_approvals"]) == (
        None,
        [],
        None,
        [],
    )
    assert [row["task_id"] for row in tasks["tasks"]] == [task_id]
    assert tasks["tasks"][0]["uri"] == f"state://agents/{AGENT}/tasks/{task_id}"


async def test_the_task_document_is_what_get_state_returns(url: str, tmp_path: Path) -> None:
    task_id = await agent_task(url, write_script(tmp_path / "script.json", delay=0), task_id="t-state")

    async with connect("stdio", mcp_command(url)) as client:
        read = document(await client.read_resource(task_uri(AGENT, task_id)))
        called = await client.call_tool("get_state", {"task_id": task_id})

    assert not called.is_error
    assert called.structured_content == read
    assert read["events"]["uri"] == f"state://tasks/{task_id}/events"


async def test_bad_input_is_one_line_and_the_server_goes_on(transport: str, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    task_id = await agent_task(url, write_script(tmp_path / "script.json", delay=0), task_id="t-bad")
    async with opened(url) as store:
        await store.put_artifact(
            Artifact(id="a-1", task_id=task_id, type="step_report", summary="the logs", bytes=0),
            b'{"slow": true}',
        )
    bad = {
        "state://agents/ops": "names no ratchet resource",
        "state://agents//tasks/x": "malformed",
        "state://agents/ops/tasks/nope": "no task with id 'nope'",
        f"state://agents/someone/tasks/{task_id}": f"belongs to agent 'ops', not 'someone'; read state://agents/ops/tasks/{task_id}",
        f"state://tasks/{task_id}/artifacts/missing": "no artifact with id 'missing'",
        "state://tasks/nope/events": "no task with id 'nope'",
    }

    async with connect(transport, mcp_command(url)) as client:
        errors = {}
        for uri in bad:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            errors[uri] = str(refused.value)
        unknown = await client.call_tool("get_state", {"task_id": "nope"})
        empty = await client.call_tool("get_state", {"task_id": ""})
        misshapen = await client.call_tool("patch_state", {"task_id": task_id, "patch": "not a patch"})
        missing = await client.call_tool("create_task", {})
        artifact = await client.read_resource(f"state://tasks/{task_id}/artifacts/a-1")
        still = document(await client.read_resource(task_uri(AGENT, task_id)))

    for uri, expected in bad.items():
        assert expected in errors[uri]
        assert "\n" not in errors[uri]
    assert unknown.is_error and "no task with id 'nope'" in unknown.content[0].text  # type: ignore[union-attr]
    assert empty.is_error
    for refused_call, expected in [
        (misshapen, "bad arguments for patch_state: patch: Input should be a valid dictionary"),
        (missing, "bad arguments for create_task: instruction: Field required"),
    ]:
        assert refused_call.is_error
        said = refused_call.content[0].text  # type: ignore[union-attr]
        assert expected in said
        assert "\n" not in said
    assert (text_of(artifact), artifact.contents[0].mime_type) == ('{"slow": true}', "application/json")
    assert still["task_id"] == task_id


async def test_a_store_in_memory_is_served_in_process() -> None:
    async with opened("memory://") as store:
        server = build_server(store, agent=None)
        async with Client(server) as client:
            templates = await client.list_resource_templates()
            with pytest.raises(MCPError, match="no task with id 'x'"):
                await client.read_resource("state://agents/a/tasks/x")
            listed = await client.read_resource("state://agents/a/tasks")

    assert [t.uri_template for t in templates.resource_templates] == TEMPLATES
    assert json.loads(text_of(listed))["tasks"] == []


def test_uris_round_trip_any_id() -> None:
    uri = task_uri("team/a b", "t:1/2")

    address = parse_uri(uri)

    assert "/" not in uri.removeprefix("state://agents/").removesuffix("/tasks/t%3A1%2F2").replace("%2F", "")
    assert (address.kind, address.agent, address.task) == ("task", "team/a b", "t:1/2")


async def test_the_task_document_shows_its_family_its_pending_call_and_its_budget() -> None:
    async with opened("memory://") as store:
        await store.create_task(Task(id="p", name="lead", instruction="lead", agent="lead"))
        await store.create_task(
            Task(
                id="c",
                name="deploy",
                instruction="deploy",
                agent=AGENT,
                parent_id="p",
                budget=Budget(max_steps=3),
            )
        )
        await store.create_task(Task(id="c2", name="ask", instruction="ask", agent="asker", parent_id="p"))
        await store.replace_steps("c", [Step(task_id="c", index=0, name="ship", status=StepStatus.CURRENT)])
        await store.update_task((await store.get_task("c")).model_copy(update={"status": TaskStatus.RUNNING}))
        waiting = {"status": TaskStatus.WAITING, "waiting_on": WaitReason.APPROVAL}
        await store.update_task((await store.get_task("c")).model_copy(update=waiting))
        await store.request_approval(
            Approval(task_id="c", seq=4, tool="deploy", arguments={"env": "prod"}, step=0)
        )
        async with Client(build_server(store, agent=None)) as client:
            child = document(await client.read_resource(task_uri(AGENT, "c")))
            parent = document(await client.read_resource(task_uri("lead", "p")))

    assert (child["status"], child["waiting_on"]) == ("waiting", "approval")
    assert [(a["tool"], a["arguments"], a["step"]) for a in child["pending_approvals"]] == [
        ("deploy", {"env": "prod"}, 1)
    ]
    assert child["parent"] == {"task_id": "p", "uri": "state://agents/lead/tasks/p"}
    assert [(s["step"], s["name"], s["status"]) for s in child["plan"]] == [(1, "ship", "current")]
    assert child["budget"]["limits"]["steps"] == 3
    assert (child["budget"]["used"]["steps"], child["budget"]["left"]["steps"]) == (1, 2)
    assert child["budget"]["left"]["llm_tokens"] is None
    assert [(c["task_id"], c["uri"]) for c in parent["children"]] == [
        ("c", f"state://agents/{AGENT}/tasks/c"),
        ("c2", "state://agents/asker/tasks/c2"),
    ]
