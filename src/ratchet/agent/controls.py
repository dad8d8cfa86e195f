"""The model's controls over its task: built-in tools that replan, skip the step, end or fail the task.

The model asks for one like any tool call, in an act turn. Its effect is
the loop's to make (a new plan, a skipped step, the task's end), so a call
here only reads and checks the request; the loop acts on it once the
answer's other tool calls have run. Everything follows from the journaled
model answer, so a resume makes the same decision again by replay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import TaskStopped
from ..providers.base import ToolCall

__all__ = ["CONTROL_NAMES", "CONTROL_SCHEMAS", "Control", "TaskFailedByAgent", "read_control"]


class TaskFailedByAgent(TaskStopped):
    """The agent's model gave the task up (``fail_task``)."""


def _schema(name: str, description: str, argument: str, about: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {argument: {"type": "string", "description": about}},
            "required": [argument],
        },
    }


CONTROL_SCHEMAS: list[dict[str, Any]] = [
    _schema(
        "replan",
        "Ask for a new plan for this step and the ones after it (completed steps are kept), "
        "when the plan no longer fits what you found.",
        "reason",
        "Why the plan must change.",
    ),
    _schema(
        "skip_step",
        "Skip the current step (it is not needed or cannot apply); the next step starts.",
        "reason",
        "Why the step is skipped.",
    ),
    _schema(
        "complete_task",
        "End the whole task now, successfully, with its result (the steps left are skipped).",
        "result",
        "The task's result, for the person who gave it.",
    ),
    _schema(
        "fail_task",
        "End the whole task now as failed, when it cannot be done at all.",
        "reason",
        "Why the task cannot be done.",
    ),
]

CONTROL_NAMES = frozenset(s["name"] for s in CONTROL_SCHEMAS)
_ARGUMENT = {s["name"]: s["parameters"]["required"][0] for s in CONTROL_SCHEMAS}


@dataclass(frozen=True)
class Control:
    """A control the model asked for: its name and its reason (or, for complete_task, the result)."""

    name: str
    text: str


def read_control(call: ToolCall) -> Control | str:
    """The control a tool call asks for, or the error message the model gets back instead."""
    argument = _ARGUMENT[call.name]
    value = call.arguments.get(argument)
    if value is not None and not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False)  # a result given as JSON is kept as its text
    if not value or not value.strip():
        return f'error: {call.name} needs its {argument}: {{"{argument}": "..."}}'
    return Control(call.name, value.strip())
