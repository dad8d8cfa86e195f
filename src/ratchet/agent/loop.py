"""The agent: plan, then act and verify step by step, retry or replan; a durable workflow.

Everything the loop decides follows from journaled model answers and tool
results, so a resumed task rebuilds the same plan, steps and messages by
replay. Step records, messages, events and checkpoints go through
``ctx.progress``, which makes each once: a resume never writes them twice.

The run is split by concept: planning.py (plan, adopt, verify, replan),
acting.py (act turns, tool calls, outputs fitted to the prompt),
controls.py (the model's replan, skip_step, complete_task, fail_task),
findings.py (the plan overview and earlier reports in prompts), and this
module, the loop over the steps.
"""

from __future__ import annotations

import functools
import shutil
from typing import Any

from ..engine.context import Context
from ..engine.workflow import Workflow
from ..errors import InputError
from ..records import Severity, Step, StepStatus, Task
from ..trust.code import enforced_trust
from ..trust.workspace import confined_workspace, make_workspace, writing_in
from .acting import Acting
from .builtin_tools import builtin_tools
from .controls import Control, TaskFailedByAgent
from .findings import Report
from .mcp.servers import check_admitted
from .memory import exchanges_of, session_history, session_remember
from .planning import Planning
from .run_base import StepFailed
from .spec import BUILTIN_TOOL_NAMES, AgentSpec, agent_middleware, load_tools, recorded_checkpoint_policy
from .step_timeout import StepDeadline, attempt_within

__all__ = ["AGENT_WORKFLOW", "agent_loop"]

# How much of each new answer or fact the replan it brings quotes as its reason.
_NEWS_CHARS = 300


def _tools_for(task: Task, store: Any) -> list[Any]:
    spec = AgentSpec.model_validate(task.inputs_params.get("agent") or {})
    workspace = confined_workspace(task.id, task.workspace)
    tools = load_tools(spec.tool_sources)
    if spec.tool_names is not None:
        tools = [t for t in tools if t.name in spec.tool_names]
    taken = sorted(BUILTIN_TOOL_NAMES.intersection(t.name for t in tools))
    if taken:
        raise InputError(f"tool name {taken[0]!r} is a built-in tool's; give the tool another name")
    check_admitted(spec.mcp, enforced_trust())  # a stdio MCP server is code the worker runs
    return [*tools, *builtin_tools(workspace, store, allow_shell=spec.allow_shell)]


async def _offer_mcp_tools(ctx: Context, spec: AgentSpec) -> Any:
    """Add the tools of the agent's MCP servers (listed once, journaled) before the built-in ones.

    Returns the run's connections to its servers (None without servers); closed when the run ends.
    """
    if not spec.mcp:
        return None
    from .mcp.tools import offer_mcp_tools

    tools, connections = await offer_mcp_tools(ctx, spec.mcp, BUILTIN_TOOL_NAMES)
    own = {name: t for name, t in ctx.tools.items() if name not in BUILTIN_TOOL_NAMES}
    built_in = {name: t for name, t in ctx.tools.items() if name in BUILTIN_TOOL_NAMES}
    ctx.tools = {**own, **{t.name: t for t in tools}, **built_in}
    return connections


class _Run(Planning, Acting):
    """One run of the loop over one task: plan, then each step in turn."""

    async def run(self) -> str:
        await self.adopt(await self.plan())
        report, feedback = "", ""
        index = 0
        while index < len(self.steps):
            step = self.steps[index]
            self.ctx.budget.count_step()
            await self.ctx.budget.check()
            await self.record("step_started", f"step {index + 1}: {step.name}", data={"index": index})
            self.ctx.current_step = index
            if step.attempts <= 1:  # a retry keeps what the earlier attempts learnt
                self.news = []
            act = functools.partial(self.act, step, feedback)
            outcome, timed_out = await attempt_within(self.ctx, self.spec.step_timeout, step, act)
            feedback = ""
            if isinstance(outcome, Control):
                if outcome.name == "complete_task":
                    return await self.complete_early(step, outcome.text)
                if outcome.name == "fail_task":
                    await self.fail_step(step, outcome.text, "task_failed_by_agent")
                    raise TaskFailedByAgent(
                        f"the agent gave the task up at step {index + 1} ({step.name}): {outcome.text}"
                    )
                if outcome.name == "skip_step":
                    self.steps[index] = step.transition(StepStatus.SKIPPED, failure_message=outcome.text)
                    self.reports[index] = Report(f"skipped: {outcome.text}")
                    index = await self.advance(
                        index, "step_skipped", f"step {index + 1} skipped: {step.name}: {outcome.text}"
                    )
                else:  # replan: the new plan is in place, its first step current
                    index += 1
                continue
            report = outcome or ""
            passed, reason = (False, timed_out) if timed_out else await self.verify(step, report)
            if passed:
                self.steps[index] = step.transition(StepStatus.COMPLETED)
                self.reports[index] = await self.keep_report(step, report)
                index = await self.advance(
                    index, "step_completed", f"step {index + 1} done: {step.name}", report=report[:500]
                )
                continue
            if step.attempts < self.spec.max_step_attempts:
                self.steps[index] = step.model_copy(update={"attempts": step.attempts + 1})
                feedback = reason
                await self.record(
                    "step_retry",
                    f"step {index + 1} did not pass its check ({reason}); trying it again",
                    severity=Severity.WARNING,
                    data={"index": index},
                )
                continue
            failed = step.transition(StepStatus.FAILED, failure_message=reason)
            why = f"step {index + 1} ({step.name}) failed its check {step.attempts} times: {reason}"
            kept = [*self.steps[:index], failed]
            if self.may_replan and await self.replace_rest(
                why, kept, "the failed step and the ones after it", "failure"
            ):
                index += 1
                continue
            await self.fail_step(step, reason, "step_failed")
            raise StepFailed(f"step {index + 1} ({step.name}) failed: {reason}")
        return report

    async def advance(self, index: int, kind: str, message: str, **data: Any) -> int:
        """Record that step `index` ended, make the next one current, replan on news; the next index.

        New information met during the step (``replan_on``) replaces the
        steps after it, within the task's replans; a rejected replan keeps them.
        """
        after = index + 1
        if after < len(self.steps):
            self.steps[after] = self.steps[after].transition(StepStatus.CURRENT, attempts=1)
        await self.record(kind, message, data={"index": index, **data})
        if self.news and after < len(self.steps) and self.may_replan:
            news = "; ".join(item[:_NEWS_CHARS] for item in self.news)
            why = f"new information during step {index + 1} ({self.steps[index].name}): {news}"
            await self.replace_rest(why, self.steps[:after], "the steps not started yet", "news")
        await self.ctx.checkpoint(steps=self.steps)
        return after

    async def complete_early(self, step: Step, result: str) -> str:
        """The model ended the task in `step`: it completes, the steps left are skipped, never run."""
        self.steps[step.index] = step.transition(StepStatus.COMPLETED)
        for later in range(step.index + 1, len(self.steps)):
            self.steps[later] = self.steps[later].transition(
                StepStatus.SKIPPED, failure_message="not needed: the agent completed the task"
            )
        await self.record(
            "task_completed_by_agent",
            f"the agent completed the task at step {step.index + 1} ({step.name}): {result[:300]}",
            data={"index": step.index, "result": result},
        )
        return result

    async def fail_step(self, step: Step, reason: str, kind: str) -> None:
        """Close the plan on a failure: `step` failed with `reason`, the steps after it cancelled."""
        self.steps[step.index] = step.transition(StepStatus.FAILED, failure_message=reason)
        for later in range(step.index + 1, len(self.steps)):
            self.steps[later] = self.steps[later].transition(StepStatus.CANCELLED)
        await self.record(
            kind,
            f"step {step.index + 1} failed: {step.name}: {reason}",
            severity=Severity.ERROR,
            data={"index": step.index, "reason": reason},
        )


async def agent_loop(ctx: Context, agent: dict[str, Any] | None = None, **_: Any) -> str:
    """Plan the task's instruction into steps and carry them out (docs/agent.md)."""
    spec = AgentSpec.model_validate(agent or {})
    # Only ever a directory under the workspace root: the recorded one is data anyone with the store wrote.
    workspace = confined_workspace(ctx.task_id, ctx.task.workspace)
    with writing_in(workspace):  # a full disk stops the task resumable, not failed
        make_workspace(workspace)
    ctx.state = ctx.state.model_copy(update={"constraints": spec.constraints})
    run = _Run(ctx, spec)
    connections = await _offer_mcp_tools(ctx, spec)
    try:
        if spec.session is not None:  # memory across tasks (memory.py)
            ctx.use_session(spec.session)
            run.memory = exchanges_of({"history": await ctx.call_tool(session_history)})
        report = await run.run()
        if spec.session is not None:
            await ctx.call_tool(session_remember, {"user": ctx.task.instruction, "assistant": report})
    finally:
        if connections is not None:
            await connections.close()
    shutil.rmtree(workspace, ignore_errors=True)  # kept on failure, for people to look at
    return report


agent_loop = Workflow(  # type: ignore[assignment]
    agent_loop,
    name="agent",
    tools_for=_tools_for,
    middleware=[StepDeadline()],
    middleware_for=agent_middleware,
    checkpoint_for=recorded_checkpoint_policy,
    code_inputs=("agent",),  # its spec: tool sources, compaction, MCP servers
)
AGENT_WORKFLOW = "ratchet.agent.loop:agent_loop"
