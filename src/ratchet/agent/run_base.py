"""What every part of an agent run shares: its context, spec and steps, and its progress writes.

The run is split by concept (planning.py, acting.py, loop.py); each part
is a mixin over `RunBase`, which holds the state they share and writes
progress (step records, events, messages) once, through ``ctx.progress``.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import ValidationError

from ..engine.context import Context
from ..errors import DuplicateRecord, TaskStopped
from ..observe.spans import step_span
from ..providers import ModelResponse
from ..records import Artifact, Event, Message, Severity, Step
from ..validation import problems
from .findings import SUMMARY_CHARS, Report, long_report
from .spec import AgentSpec

__all__ = ["RunBase", "StepFailed", "assistant_message", "short_error"]


class StepFailed(TaskStopped):
    """A step could not be done."""


class RunBase:
    """One run of the loop over one task: its steps, its messages, its writes."""

    def __init__(self, ctx: Context, spec: AgentSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.steps: list[Step] = []
        self._steps_over: set[int] = set()
        # What each ended step found, by step index: rebuilt by replay, as the answers are journaled.
        self.reports: dict[int, Report] = {}
        self.replans = 0
        # New information met during the current step (answers, facts: ``replan_on``).
        self.news: list[str] = []
        # The earlier exchanges of the agent's session, read as the task starts (memory.py).
        self.memory: list[dict[str, Any]] = []

    @property
    def may_replan(self) -> bool:
        """Whether the task has a replan left (``max_replans``, every kind of replan counted)."""
        return self.replans < self.spec.max_replans

    async def call_model(self, request: dict[str, Any]) -> ModelResponse:
        """One request to the task's model (journaled), with the agent's model settings."""
        return await self.ctx.call_model({**request, "settings": self.spec.model_settings})

    async def replace_rest(self, why: str, kept: list[Step], replaced: str, trigger: str) -> bool:
        """Replan, keeping `kept`; False if the plan stays as it was (planning.py makes it)."""
        raise NotImplementedError

    async def keep_report(self, step: Step, text: str) -> Report:
        """What an ended step found, as later prompts carry it; a long report is kept as an artifact."""
        ctx = self.ctx
        if not long_report(text, ctx.task.budget.max_artifact_bytes_in_context):
            return Report(text)
        body = text.encode("utf-8")
        artifact = Artifact(
            id=f"{ctx.task_id}-report-{step.index + 1}",
            task_id=ctx.task_id,
            type="step_report",
            summary=text[:SUMMARY_CHARS].replace("\n", " "),
            bytes=len(body),
            step=step.index,
        )
        if not ctx.replaying:
            with contextlib.suppress(DuplicateRecord):  # stored before a crash, on an earlier run
                await ctx.store.put_artifact(artifact, body, fence=ctx.lease)
        return Report(text, artifact.id)

    async def record(
        self,
        kind: str,
        message: str,
        *,
        severity: Severity = Severity.INFO,
        data: dict[str, Any] | None = None,
        task_update: dict[str, Any] | None = None,
    ) -> None:
        """Write the steps as they are now and one event, together, once (live only)."""
        ctx = self.ctx
        if task_update:
            ctx.task = ctx.task.model_copy(update=task_update)
        steps = list(self.steps)
        event = Event(
            task_id=ctx.task_id,
            kind=kind,
            severity=severity,
            message=message,
            display_message=message,
            data=data or {},
        )

        async def write(tx: Any) -> None:
            await tx.replace_steps(ctx.task_id, steps)
            await tx.append_event(event)

        # The steps this write ends are reported as spans once: by the run that makes it live.
        over_before, self._steps_over = self._steps_over, {s.index for s in steps if s.status.is_terminal}
        if await ctx.progress(write):
            ops = list(ctx.journal.recorded.values())
            for step in steps:
                if step.index in self._steps_over - over_before:
                    step_span(ctx.task, step, ops)

    async def keep_messages(self, messages: list[dict[str, Any]]) -> None:
        """Append messages to the task's stored history, once (live only)."""
        if not messages:
            return
        thread = [Message(thread_id=self.ctx.task_id, **_message_fields(m)) for m in messages]

        async def write(tx: Any) -> None:
            await tx.append_messages(thread)

        await self.ctx.progress(write)


def short_error(error: BaseException) -> str:
    """One line saying what was wrong, for an event or for the model to read."""
    if isinstance(error, ValidationError):
        return problems(error, whole="plan", limit=3)
    return str(error).splitlines()[0][:300] if str(error) else type(error).__name__


def assistant_message(answer: ModelResponse) -> dict[str, Any]:
    """A model's answer as a message of the history (its tool calls in the OpenAI shape)."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.content
        if isinstance(answer.content, str)
        else (json.dumps(answer.content) if answer.content is not None else None),
    }
    if answer.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in answer.tool_calls
        ]
    return message


def _message_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {
        key: message[key]
        for key in ("role", "content", "tool_calls", "tool_call_id", "name")
        if message.get(key) is not None
    }
