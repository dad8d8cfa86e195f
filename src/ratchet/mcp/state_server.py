"""`StateServer`: the SDK's `MCPServer` serving a store's tasks as ``state://`` resources.

Resources are read from the store at each request, never cached: the four
URI templates (`ratchet.views.uris`) are listed by ``resources/templates/list``,
and ``resources/list`` names the concrete resources of the newest tasks, so a
client finds them without knowing an id.

Every failure to read is an MCP error with a one-line message (a malformed
URI, an unknown task or artifact: ``INVALID_PARAMS``); the server goes on
serving.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp_types import CallToolResult, InputRequiredResult
from mcp_types import Resource as MCPResource
from mcp_types import ResourceTemplate as MCPResourceTemplate
from pydantic import AnyUrl, ValidationError

from ..errors import InputError, RatchetError
from ..runtime import Runtime
from ..store import StateStore
from ..validation import problems
from ..views import documents
from ..views.uris import (
    AGENT_TASKS_TEMPLATE,
    ARTIFACT_TEMPLATE,
    EVENTS_TEMPLATE,
    TASK_TEMPLATE,
    agent_tasks_uri,
    events_uri,
    parse_uri,
    task_uri,
)
from .subscriptions import TaskWatch

__all__ = ["LISTED_TASKS", "StateServer"]

LISTED_TASKS = 50
"""How many of the newest tasks ``resources/list`` names (their documents and events)."""

_JSON = "application/json"

_TEMPLATES = [
    MCPResourceTemplate(
        uri_template=TASK_TEMPLATE,
        name="task",
        title="A task's state",
        description="The task's status and wait reason, goal, inputs, plan with each step's status, "
        "AgentState (facts, open questions, artifacts, risk flags), budget used and left, "
        "pending approval or question, parent and children.",
        mime_type=_JSON,
    ),
    MCPResourceTemplate(
        uri_template=AGENT_TASKS_TEMPLATE,
        name="agent_tasks",
        title="An agent's tasks",
        description=f"The agent's tasks, newest first (at most {documents.AGENT_TASKS_LIMIT}).",
        mime_type=_JSON,
    ),
    MCPResourceTemplate(
        uri_template=EVENTS_TEMPLATE,
        name="task_events",
        title="A task's recent events",
        description=f"The task's newest events, oldest first (at most {documents.EVENTS_LIMIT}).",
        mime_type=_JSON,
    ),
    MCPResourceTemplate(
        uri_template=ARTIFACT_TEMPLATE,
        name="artifact",
        title="An artifact of a task",
        description="The artifact's content, with its MIME type.",
    ),
]


class StateServer(MCPServer):
    """An `MCPServer` over one store: its tasks as resources, read at each request.

    Attributes:
        runtime: the Runtime over the store (the write tools act through it).
        store: the store served.
        agent: the agent a connection acts as when nothing else says
            (``--agent``; over HTTP, a token may name another: see `ratchet.mcp.identity`).
        watch: the tasks clients subscribed to, followed on the store's change feed.
    """

    def __init__(self, runtime: Runtime, *, agent: str | None, **options: Any) -> None:
        bus = InMemorySubscriptionBus()
        super().__init__(subscriptions=bus, **options)
        self.runtime = runtime
        self.store: StateStore = runtime.store
        self.agent = agent
        self.watch = TaskWatch(self.store, bus)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as error:
            # The SDK reports arguments that miss the input schema with pydantic's multi-line
            # text; a client (often a model) acts on one line, as for every other refusal.
            if not isinstance(error.__cause__, ValidationError):
                raise
            said = problems(error.__cause__, whole="arguments", limit=5)
            raise ToolError(f"bad arguments for {name}: {said}") from None

    async def list_resource_templates(self) -> list[MCPResourceTemplate]:
        return [*_TEMPLATES, *await super().list_resource_templates()]

    async def list_resources(self) -> list[MCPResource]:
        async with self.store.reading() as tx:
            tasks, _ = await documents.recent_tasks(tx, agent=None, limit=LISTED_TASKS)
        return [*_task_resources(tasks), *await super().list_resources()]

    async def read_resource(
        self, uri: AnyUrl | str, context: Context[Any, Any] | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        text = str(uri)
        if not text.startswith("state://"):
            return await super().read_resource(uri, context)
        try:
            return [await self._read(text)]
        except InputError as exc:  # a malformed URI, an unknown task or artifact, a wrong agent
            raise ResourceNotFoundError(exc.message) from None
        except RatchetError as exc:  # the store failed: one line, and the server goes on
            raise ResourceError(exc.message) from None

    async def _read(self, uri: str) -> ReadResourceContents:
        address = parse_uri(uri)
        store = self.store
        if address.kind == "artifact":
            assert address.task is not None and address.artifact is not None
            found = await documents.artifact_content(store, address.task, address.artifact)
            return ReadResourceContents(content=found.content, mime_type=found.mime_type)
        if address.kind == "task":
            assert address.task is not None
            document = await documents.task_document(store, address.task, agent=address.agent)
        elif address.kind == "agent_tasks":
            assert address.agent is not None
            document = await documents.agent_tasks_document(store, address.agent)
        else:
            assert address.task is not None
            document = await documents.events_document(store, address.task)
        return ReadResourceContents(content=json.dumps(document, indent=2), mime_type=_JSON)


def _task_resources(tasks: list[Any]) -> list[MCPResource]:
    """The concrete resources of `tasks`: each agent's list once, each task's document and events."""
    listed: list[MCPResource] = []
    agents: list[str] = []
    for task in tasks:
        agent = documents.task_agent(task)
        if agent not in agents:
            agents.append(agent)
        listed.append(
            MCPResource(
                uri=task_uri(agent, task.id),
                name=f"task {task.id}",
                title=f"{task.name} ({task.status})",
                description=f"Task {task.id} of agent {agent}: {task.status}",
                mime_type=_JSON,
            )
        )
        listed.append(
            MCPResource(
                uri=events_uri(task.id),
                name=f"events of {task.id}",
                title=f"Events of {task.name}",
                mime_type=_JSON,
            )
        )
    return [
        *(
            MCPResource(uri=agent_tasks_uri(agent), name=f"tasks of {agent}", mime_type=_JSON)
            for agent in agents
        ),
        *listed,
    ]
