"""The agent: plan, then act and verify step by step, retry or replan; a durable workflow.

Everything the loop decides follows from journaled model answers and tool
results, so a resumed task rebuilds the same plan, steps and messages by
replay. Step records, messages, events and checkpoints go through
``ctx.progress``, which makes each once: a resume never writes them twice.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from typing import Any

from pydantic import ValidationError

from ..engine.context import Context
from ..engine.workflow import Workflow
from ..errors import DuplicateRecord, InputError, OperationFailed, StoreError, TaskStopped
from ..model import Artifact, ArtifactRef, Event, Message, Plan, PlanStep, Severity, Step, StepStatus, Task
from ..providers import ModelResponse
from ..workspace import confined_workspace
from . import prompts
from .builtin_tools import builtin_tools
from .spec import BUILTIN_TOOL_NAMES, AgentSpec, load_tools

__all__ = ["AGENT_WORKFLOW", "agent_loop"]

MAX_PLAN_REPAIRS = 2
MAX_REPLANS = 2


class PlanningFailed(TaskStopped):
    """The planner gave no valid plan."""


class StepFailed(TaskStopped):
    """A step could not be done."""


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


class _Run:
    """One run of the loop over one task: its steps, its messages, its writes."""

    def __init__(self, ctx: Context, spec: AgentSpec) -> None:
        self.ctx = ctx
        self.spec = spec
        self.steps: list[Step] = []
        self.schemas = [t.schema() for t in ctx.tools.values()] + [
            prompts.UPDATE_STATE_SCHEMA,
            prompts.ASK_USER_SCHEMA,
        ]

    # ------------------------------------------------------------------ writes (live only)

    async def record(
        self,
        kind: str,
        message: str,
        *,
        severity: Severity = Severity.INFO,
        data: dict[str, Any] | None = None,
        task_update: dict[str, Any] | None = None,
    ) -> None:
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

        await ctx.progress(write)

    async def keep_messages(self, messages: list[dict[str, Any]]) -> None:
        if not messages:
            return
        thread = [Message(thread_id=self.ctx.task_id, **_message_fields(m)) for m in messages]

        async def write(tx: Any) -> None:
            await tx.append_messages(thread)

        await self.ctx.progress(write)

    # ------------------------------------------------------------------ plan

    async def plan(self) -> Plan:
        ctx, spec = self.ctx, self.spec
        tools = ", ".join(sorted(ctx.tools)) or "none"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.PLAN.format(instructions=spec.instructions, tools=tools)},
            {"role": "user", "content": ctx.task.instruction},
        ]
        problem = ""
        for _ in range(1 + MAX_PLAN_REPAIRS):
            answer = None
            try:
                answer = await ctx.call_model({"purpose": "plan", "messages": messages, "json_output": True})
                return Plan.model_validate(_json_object(answer.content))
            except (ValidationError, ValueError, OperationFailed) as error:
                if isinstance(error, OperationFailed) and error.attempts > 1:
                    raise  # no answer even after its retries (an outage): the task fails, retryable
                problem = _short(error)
                said = [] if answer is None else [_assistant(answer)]
                messages = [
                    *messages,
                    *said,
                    {"role": "user", "content": prompts.REPAIR.format(error=problem)},
                ]
                await self.record(
                    "plan_invalid", f"the plan was not valid: {problem}", severity=Severity.WARNING
                )
        self.steps = [
            Step(
                task_id=ctx.task_id,
                index=0,
                name="Plan the task",
                description="Planning failed",
                status=StepStatus.FAILED,
                failure_message=problem,
            )
        ]
        await self.record(
            "plan_failed",
            f"planning failed after {MAX_PLAN_REPAIRS} repairs: {problem}",
            severity=Severity.ERROR,
        )
        raise PlanningFailed(f"planning failed after {MAX_PLAN_REPAIRS} repairs: {problem}")

    def _steps_from(self, planned: list[PlanStep], start: int) -> list[Step]:
        return [
            Step(
                task_id=self.ctx.task_id,
                index=start + i,
                name=p.step_name,
                description=p.description,
                action_instruction=p.action_instruction,
                validation_instruction=p.validation_instruction,
            )
            for i, p in enumerate(planned)
        ]

    async def adopt(self, plan: Plan) -> None:
        self.ctx.state = self.ctx.state.model_copy(update={"goal": plan.goal})
        self.steps = self._steps_from(plan.steps, 0)
        self.steps[0] = self.steps[0].transition(StepStatus.CURRENT, attempts=1)
        await self.ctx.apply_patch({"ops": [{"op": "replace_plan", "plan": [s.name for s in self.steps]}]})
        await self.record(
            "plan",
            f"planned {len(self.steps)} steps: " + "; ".join(s.name for s in self.steps),
            # The task's own inputs win: a plan never rewrites the recorded agent.
            task_update={
                "goal": plan.goal,
                "context": plan.context,
                "inputs_params": {**plan.inputs_params, **self.ctx.task.inputs_params},
            },
        )

    # ------------------------------------------------------------------ act

    async def act(self, step: Step, feedback: str) -> str:
        ctx, spec = self.ctx, self.spec
        system = prompts.ACT.format(
            instructions=spec.instructions,
            goal=ctx.task.goal or ctx.task.instruction,
            number=step.index + 1,
            total=len(self.steps),
            name=step.name,
            description=step.description,
            state=prompts.state_slice(ctx.state, ctx.task.budget.max_artifact_bytes_in_context),
        )
        user = step.action_instruction or step.description or step.name
        if feedback:
            user += f"\n\nAn earlier attempt at this step did not pass its check: {feedback}"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
        ]
        await self.keep_messages(messages)
        for _ in range(spec.max_turns_per_step):
            messages = await self.compact(messages)
            answer = await ctx.call_model({"purpose": "act", "messages": messages, "tools": self.schemas})
            if len(answer.tool_calls) > spec.max_tool_calls_per_answer:
                refusal = await self.refuse_tool_calls(answer)
                messages += refusal
                await self.keep_messages(refusal)
                continue
            said = _assistant(answer)
            replies = await self.run_tool_calls(answer)
            messages += [said, *replies]
            await self.keep_messages([said, *replies])
            if not answer.tool_calls:
                return answer.content if isinstance(answer.content, str) else json.dumps(answer.content)
        raise StepFailed(
            f"step {step.index + 1} ({step.name}) used its {spec.max_turns_per_step} turns without finishing"
        )

    async def refuse_tool_calls(self, answer: ModelResponse) -> list[dict[str, Any]]:
        """Run none of an answer's tool calls, too many at once: the model is told and asked again.

        The refused answer costs one of the step's turns, so a model that
        keeps asking for too many fails the step instead of looping. Its
        calls are left out of the history (each would need a reply): the
        history keeps what it said and the refusal.
        """
        asked, limit = len(answer.tool_calls), self.spec.max_tool_calls_per_answer
        await self.record(
            "tool_calls_refused",
            f"the model asked for {asked} tool calls in one answer, more than the limit of {limit}; "
            "none ran, and the model was asked again",
            severity=Severity.WARNING,
            data={"asked": asked, "limit": limit},
        )
        said = answer.content if isinstance(answer.content, str) and answer.content else None
        return [
            {"role": "assistant", "content": said or f"(an answer asking for {asked} tool calls)"},
            {"role": "user", "content": prompts.TOO_MANY_TOOL_CALLS.format(asked=asked, limit=limit)},
        ]

    async def run_tool_calls(self, answer: ModelResponse) -> list[dict[str, Any]]:
        ctx = self.ctx
        replies: dict[str, str] = {}
        real = []
        for call in answer.tool_calls:
            if call.name == "update_state":
                replies[call.id] = await self.update_state(call.arguments)
            elif call.name == "ask_user":
                replies[call.id] = await self.ask_user(call.arguments)
            elif call.name not in ctx.tools:
                known = ", ".join(sorted(ctx.tools))
                replies[call.id] = f"error: there is no tool named {call.name!r}; the tools are: {known}"
            else:
                real.append(call)
        first = ctx.next_seq  # call_tools numbers the calls from here, in order
        outcomes = await ctx.call_tools([(c.name, c.arguments) for c in real])
        for offset, (call, outcome) in enumerate(zip(real, outcomes, strict=True)):
            if isinstance(outcome, OperationFailed):
                replies[call.id] = f"error: {outcome.error_type}: {outcome.error}"
            else:
                replies[call.id] = await self.fit(call.name, outcome, ctx.result_artifact(first + offset))
        return [
            {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": replies[c.id]}
            for c in answer.tool_calls
        ]

    async def update_state(self, arguments: dict[str, Any]) -> str:
        try:
            await self.ctx.apply_patch(arguments)
        except (ValidationError, ValueError) as error:
            return f"error: the state patch is not valid: {_short(error)}"
        except StoreError:
            raise  # not the model's to hear: the task stops, resumable
        except Exception as error:  # StatePatchError: the patch does not apply
            return f"error: {error}"
        return "state updated"

    async def ask_user(self, arguments: dict[str, Any]) -> str:
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return 'error: ask_user needs a question: {"question": "..."}'
        return await self.ctx.ask_user(question.strip())

    async def fit(self, tool_name: str, output: Any, kept: ArtifactRef | None = None) -> str:
        """The tool output as the prompt carries it: whole, or as an artifact's summary and id.

        `kept` is the artifact the journal already keeps the output in (it
        was too large to keep inline): the prompt refers to that one, so the
        output is not stored a second time.
        """
        ctx = self.ctx
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        limit = ctx.task.budget.max_artifact_bytes_in_context
        size = kept.bytes if kept is not None else len(text.encode("utf-8"))
        if size <= limit:
            return text
        if tool_name == "read_artifact":  # the slice the model asked for, not another artifact
            return text
        ref = kept or await self._keep_artifact(tool_name, text)
        await ctx.apply_patch({"ops": [{"op": "add_artifact", "artifact": ref.model_dump()}]})
        return (
            f"[the output of {tool_name} is {ref.bytes} bytes, kept as artifact {ref.artifact_id}; "
            f"it begins: {ref.summary!r}; read more with read_artifact]"
        )

    async def _keep_artifact(self, tool_name: str, text: str) -> ArtifactRef:
        ctx = self.ctx
        body = text.encode("utf-8")
        artifact = Artifact(
            id=f"{ctx.task_id}-artifact-{len(ctx.state.artifacts) + 1}",
            task_id=ctx.task_id,
            type=f"tool_result.{tool_name}",
            summary=text[:200].replace("\n", " "),
            bytes=len(body),
        )
        if not ctx.replaying:
            with contextlib.suppress(DuplicateRecord):  # stored before a crash, on an earlier run
                await ctx.store.put_artifact(artifact, body, fence=ctx.lease)
        return artifact.ref

    async def compact(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Summarize older turns (a journaled call) when the history passes its budget."""
        keep = self.spec.keep_recent_messages
        if _tokens(messages) <= self.spec.history_token_budget or len(messages) <= keep + 2:
            return messages
        cut = len(messages) - keep
        while cut > 2 and messages[cut].get("role") == "tool":
            cut -= 1  # never split a tool result from the call that asked for it
        older = messages[2:cut]
        if not older:
            return messages
        answer = await self.ctx.call_model(
            {
                "purpose": "summarize",
                "messages": [
                    {"role": "system", "content": prompts.SUMMARIZE},
                    {"role": "user", "content": json.dumps(older, ensure_ascii=False)},
                ],
            }
        )
        summary = {"role": "user", "content": f"Summary of the earlier turns of this step: {answer.content}"}
        await self.record("compacted", f"summarized {len(older)} earlier messages of the history")
        return [*messages[:2], summary, *messages[cut:]]

    # ------------------------------------------------------------------ verify and replan

    async def verify(self, step: Step, report: str) -> tuple[bool, str]:
        if not step.validation_instruction:
            return True, "the step has no check"
        answer = await self.ctx.call_model(
            {
                "purpose": "verify",
                "json_output": True,
                "messages": [
                    {"role": "system", "content": prompts.VERIFY},
                    {
                        "role": "user",
                        "content": f"Step: {step.name}: {step.description}\n"
                        f"Check: {step.validation_instruction}\nThe agent's report: {report}",
                    },
                ],
            }
        )
        try:
            verdict = _json_object(answer.content)
            return bool(verdict["passed"]), str(verdict.get("reason", ""))
        except (ValueError, KeyError, TypeError) as error:
            return False, f"the check gave no verdict ({_short(error)})"

    async def replan(self, failed: Step, reason: str) -> list[Step] | None:
        done = [s for s in self.steps if s.status is StepStatus.COMPLETED]
        try:
            answer = await self.ctx.call_model(
                {
                    "purpose": "replan",
                    "json_output": True,
                    "messages": [
                        {
                            "role": "system",
                            "content": prompts.REPLAN.format(
                                done="; ".join(s.name for s in done) or "none",
                                failed=failed.name,
                                reason=reason,
                            ),
                        },
                        {"role": "user", "content": self.ctx.task.instruction},
                    ],
                }
            )
            planned = Plan.model_validate({"steps": _json_object(answer.content).get("steps")}).steps
        except (ValidationError, ValueError, OperationFailed, AttributeError) as error:
            await self.record(
                "replan_rejected",
                f"the new plan was not valid ({_short(error)}); the plan stays as it was",
                severity=Severity.WARNING,
            )
            return None
        return self._steps_from(planned, len(done))

    # ------------------------------------------------------------------ the loop

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


def _json_object(content: Any) -> dict[str, Any]:
    if isinstance(content, dict):
        return content
    if isinstance(content, str):
        text = content.strip()
        if text.startswith("```"):
            text = text.strip("`").removeprefix("json").strip()
        value = json.loads(text)
        if isinstance(value, dict):
            return value
    raise ValueError(f"expected a JSON object, got {str(content)[:80]!r}")


def _short(error: BaseException) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'plan'}: {e['msg']}" for e in error.errors()[:3])
    return str(error).splitlines()[0][:300] if str(error) else type(error).__name__


def _assistant(answer: ModelResponse) -> dict[str, Any]:
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


def _tokens(messages: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) // 4
