"""The ``state://`` URIs of `ratchet mcp`, parsed and built in one place.

Four shapes (each segment percent-encoded, so an id may hold any character)::

    state://agents/{agent}/tasks/{task}           a task's document
    state://agents/{agent}/tasks                  an agent's tasks
    state://tasks/{task}/events                   a task's recent events
    state://tasks/{task}/artifacts/{artifact}     an artifact's content
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, unquote

from ..errors import InputError

__all__ = [
    "AGENT_TASKS_TEMPLATE",
    "ARTIFACT_TEMPLATE",
    "EVENTS_TEMPLATE",
    "TASK_TEMPLATE",
    "Address",
    "agent_tasks_uri",
    "artifact_uri",
    "events_uri",
    "parse_uri",
    "task_uri",
]

SCHEME = "state://"
TASK_TEMPLATE = "state://agents/{agent}/tasks/{task}"
AGENT_TASKS_TEMPLATE = "state://agents/{agent}/tasks"
EVENTS_TEMPLATE = "state://tasks/{task}/events"
ARTIFACT_TEMPLATE = "state://tasks/{task}/artifacts/{artifact}"

_SHAPES = "state://agents/AGENT/tasks[/TASK], state://tasks/TASK/events or state://tasks/TASK/artifacts/ID"


@dataclass(frozen=True)
class Address:
    """What a ``state://`` URI names.

    Attributes:
        kind: ``task``, ``agent_tasks``, ``events`` or ``artifact``.
        agent: the agent the URI names (``task``, ``agent_tasks``).
        task: the task's id (all but ``agent_tasks``).
        artifact: the artifact's id (``artifact``).
    """

    kind: str
    agent: str | None = None
    task: str | None = None
    artifact: str | None = None


def _segment(value: str) -> str:
    return quote(value, safe="")


def task_uri(agent: str, task_id: str) -> str:
    """The URI of a task's document."""
    return f"{SCHEME}agents/{_segment(agent)}/tasks/{_segment(task_id)}"


def agent_tasks_uri(agent: str) -> str:
    """The URI of an agent's task list."""
    return f"{SCHEME}agents/{_segment(agent)}/tasks"


def events_uri(task_id: str) -> str:
    """The URI of a task's recent events."""
    return f"{SCHEME}tasks/{_segment(task_id)}/events"


def artifact_uri(task_id: str, artifact_id: str) -> str:
    """The URI of an artifact's content."""
    return f"{SCHEME}tasks/{_segment(task_id)}/artifacts/{_segment(artifact_id)}"


def parse_uri(uri: str) -> Address:
    """What `uri` names.

    Raises:
        InputError: `uri` is none of the four shapes (the message lists them).
    """
    if not uri.startswith(SCHEME):
        raise InputError(f"{_shown(uri)} is not a ratchet resource; the URIs are {_SHAPES}")
    raw = uri[len(SCHEME) :].split("/")
    parts = [unquote(part) for part in raw]
    if "" in parts or "?" in uri or "#" in uri:
        raise InputError(
            f"{_shown(uri)} is malformed (an empty part, a query or a fragment); the URIs are {_SHAPES}"
        )
    match parts:
        case ["agents", agent, "tasks", task]:
            return Address("task", agent=agent, task=task)
        case ["agents", agent, "tasks"]:
            return Address("agent_tasks", agent=agent)
        case ["tasks", task, "events"]:
            return Address("events", task=task)
        case ["tasks", task, "artifacts", artifact]:
            return Address("artifact", task=task, artifact=artifact)
    raise InputError(f"{_shown(uri)} names no ratchet resource; the URIs are {_SHAPES}")


def _shown(uri: str) -> str:
    """The URI as an error message quotes it: on one line, cut short if long."""
    flat = " ".join(uri.split())
    return repr(flat if len(flat) <= 200 else flat[:200] + "...")
