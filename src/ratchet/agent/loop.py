"""The agent: plan, then act and verify step by step, retry or replan; a durable workflow.

Everything the loop decides follows from journaled model answers and tool
results, so a resumed task rebuilds the same plan, steps and messages by
replay. Step records, messages, events and checkpoints go through
``ctx.progress``, which makes each once: a resume never writes them twice.

The run is split by concept: planning.py (plan, adopt, verify, replan),
acting.py (act turns, tool calls, outputs fitted to the prompt), and this
module, the loop over the steps.
"""

from __future__ import annotations

import shutil
from typing import Any

from ..engine.context import Context
from ..engine.workflow import Workflow
from ..errors import InputError
from ..model import Severity, StepStatus, Task
from ..workspace import confined_workspace
from .acting import Acting
from .builtin_tools import builtin_tools
from .planning import MAX_REPLANS, Planning
from .run_base import StepFailed
from .spec import BUILTIN_TOOL_NAMES, AgentSpec, load_tools

__all__ = ["AGENT_WORKFLOW", "agent_loop"]


def _tools_for(task: Task, store: Any) -> list[Any]:
    spec = AgentSpec.model_validate(task.inputs_params.get("agent") or {})
    workspace = confined_workspace(task.id, task.workspace)
    tools = load_tools(spec.tool_sources)
    if spec.tool_names is not None:
        tools = [t for t in tools if t.name in spec.tool_names]
    taken = sorted(BUILTIN_TOOL_NAMES.intersection(t.name for t in tools))
    if taken:
        raise InputError(f"tool name {taken[0]!r} is a built-in tool's; give the tool another name")
    return [*tools, *builtin_tools(workspace, store, allow_shell=spec.allow_shell)]


class _Run(Planning, Acting):
    """One run of the loop over one task: plan, then each step in turn."""

    async def run(self) -> str:
        await self.adopt(await self.plan())
        report, replans, feedback = "", 0, ""
        index = 0
        while index < len(self.steps):
            step = self.steps[index]
            self.ctx.budget.count_step()
            await self.ctx.budget.check()
            await self.record("step_started", f"step {index + 1}: {step.name}", data={"index": index})
            self.ctx.current_step = index
            report = await self.act(step, feedback)
            passed, reason = await self.verify(step, report)
            if passed:
                self.steps[index] = step.transition(StepStatus.COMPLETED)
                feedback = ""
                index += 1
                if index < len(self.steps):
                    self.steps[index] = self.steps[index].transition(StepStatus.CURRENT, attempts=1)
                await self.record(
                    "step_completed",
                    f"step {step.index + 1} done: {step.name}",
                    data={"index": step.index, "report": report[:500]},
                )
                await self.ctx.checkpoint(steps=self.steps)
                continue
            if step.attempts < self.spec.max_step_attempts:
                self.steps[index] = step.model_copy(update={"attempts": step.attempts + 1})
                feedback = reason
                await self.record(
                    "step_retry",
                    f"step {index + 1} did not pass its check ({reason}); trying it again",
                    severity=Severity.WARNING,
                )
                continue
            new_steps = await self.replan(step, reason) if replans < MAX_REPLANS else None
            if new_steps:
                replans += 1
                kept = [s for s in self.steps if s.status is StepStatus.COMPLETED]
                new_steps[0] = new_steps[0].transition(StepStatus.CURRENT, attempts=1)
                self.steps = kept + new_steps
                feedback = ""
                await self.ctx.apply_patch(
                    {"ops": [{"op": "replace_plan", "plan": [s.name for s in self.steps]}]}
                )
                await self.record(
                    "replanned",
                    f"replanned after step {index + 1} failed ({reason}): "
                    + "; ".join(s.name for s in new_steps),
                    severity=Severity.WARNING,
                )
                continue
            self.steps[index] = step.transition(StepStatus.FAILED, failure_message=reason)
            for later in range(index + 1, len(self.steps)):
                self.steps[later] = self.steps[later].transition(StepStatus.CANCELLED)
            await self.record(
                "step_failed", f"step {index + 1} failed: {step.name}: {reason}", severity=Severity.ERROR
            )
            raise StepFailed(f"step {index + 1} ({step.name}) failed: {reason}")
        return report


async def agent_loop(ctx: Context, agent: dict[str, Any] | None = None, **_: Any) -> str:
    """Plan the task's instruction into steps and carry them out (docs/agent.md)."""
    spec = AgentSpec.model_validate(agent or {})
    # Only ever a directory under the workspace root: the recorded one is data anyone with the store wrote.
    workspace = confined_workspace(ctx.task_id, ctx.task.workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    ctx.state = ctx.state.model_copy(update={"constraints": spec.constraints})
    report = await _Run(ctx, spec).run()
    shutil.rmtree(workspace, ignore_errors=True)  # kept on failure, for people to look at
    return report


agent_loop = Workflow(agent_loop, name="agent", tools_for=_tools_for)  # type: ignore[assignment]
AGENT_WORKFLOW = "ratchet.agent.loop:agent_loop"
