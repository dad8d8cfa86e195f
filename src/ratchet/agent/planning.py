"""Planning: ask for a plan (repaired a bounded number of times), adopt it, verify steps, replan."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue, ValidationError

from ..errors import OperationFailed, TaskStopped
from ..records import Plan, PlanStep, Severity, Step, StepStatus
from . import prompts
from .findings import findings_text, plan_overview, report_share
from .memory import memory_messages
from .output_schemas import PLAN_OUTPUT, REPLAN_OUTPUT, VERDICT_OUTPUT
from .run_base import RunBase, assistant_message, short_error

__all__ = ["MAX_PLAN_REPAIRS", "Planning", "PlanningFailed", "json_object"]

MAX_PLAN_REPAIRS = 2


class PlanningFailed(TaskStopped):
    """The planner gave no valid plan."""


class Planning(RunBase):
    """The planner's side of a run: the plan, the steps made from it, checks and replans."""

    async def plan(self) -> Plan:
        ctx, spec = self.ctx, self.spec
        tools = ", ".join(sorted(ctx.tools)) or "none"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.PLAN.format(instructions=spec.instructions, tools=tools)},
            *memory_messages(self.memory),
            {"role": "user", "content": ctx.task.instruction},
        ]
        problem = ""
        for _ in range(1 + MAX_PLAN_REPAIRS):
            answer = None
            try:
                answer = await self.call_model(
                    {
                        "purpose": "plan",
                        "messages": messages,
                        "json_output": True,
                        "output_schema": PLAN_OUTPUT,
                    }
                )
                return Plan.model_validate(json_object(answer.content))
            except (ValidationError, ValueError, OperationFailed) as error:
                if isinstance(error, OperationFailed) and error.error_type != "MalformedAnswer":
                    # No answer at all (an outage after the call's retries, a refused key): not the
                    # plan's fault, so no repair; the task fails and `ratchet retry` plans again.
                    raise
                problem = short_error(error)
                said = [] if answer is None else [assistant_message(answer)]
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
            task_update={
                "goal": plan.goal,
                "context": _context_text(plan.context),
                "inputs_params": _merged_inputs(plan.inputs_params, self.ctx.task.inputs_params),
            },
        )

    async def verify(self, step: Step, report: str) -> tuple[bool, str]:
        if not step.validation_instruction:
            return True, "the step has no check"
        answer = await self.call_model(
            {
                "purpose": "verify",
                "json_output": True,
                "output_schema": VERDICT_OUTPUT,
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
            verdict = json_object(answer.content)
            return bool(verdict["passed"]), str(verdict.get("reason", ""))
        except (ValueError, KeyError, TypeError) as error:
            return False, f"the check gave no verdict ({short_error(error)})"

    async def replan(self, why: str, kept: list[Step], replaced: str) -> list[Step] | None:
        """Ask for new steps to follow `kept` (the records that stay); None if the answer is not valid.

        Args:
            why: why the plan must change, for the planner and the event.
            kept: the step records that stay as they are, in order.
            replaced: which steps the new ones replace, for the planner.
        """
        done = [s for s in kept if s.status is StepStatus.COMPLETED]
        try:
            answer = await self.call_model(
                {
                    "purpose": "replan",
                    "json_output": True,
                    "output_schema": REPLAN_OUTPUT,
                    "messages": [
                        {
                            "role": "system",
                            "content": prompts.REPLAN.format(
                                why=why,
                                overview=plan_overview(self.steps),
                                done="; ".join(s.name for s in done) or "none",
                                findings=findings_text(
                                    self.steps,
                                    self.reports,
                                    report_share(self.ctx.task.budget.max_artifact_bytes_in_context),
                                ),
                                replaced=replaced,
                            ),
                        },
                        {"role": "user", "content": self.ctx.task.instruction},
                    ],
                }
            )
            planned = Plan.model_validate({"steps": json_object(answer.content).get("steps")}).steps
        except (ValidationError, ValueError, OperationFailed, AttributeError) as error:
            await self.record(
                "replan_rejected",
                f"the new plan was not valid ({short_error(error)}); the plan stays as it was",
                severity=Severity.WARNING,
            )
            return None
        return self._steps_from(planned, len(kept))

    async def replace_rest(self, why: str, kept: list[Step], replaced: str, trigger: str) -> bool:
        """Replan and put the new steps after `kept`, the first one current; False if the plan stays.

        The records in `kept` stay exactly as they are (a failed or abandoned
        step keeps its status and message); what came after them is replaced.
        """
        new_steps = await self.replan(why, kept, replaced)
        if not new_steps:
            return False
        self.replans += 1
        new_steps[0] = new_steps[0].transition(StepStatus.CURRENT, attempts=1)
        self.steps = [*kept, *new_steps]
        await self.ctx.apply_patch({"ops": [{"op": "replace_plan", "plan": [s.name for s in self.steps]}]})
        await self.record(
            "replanned",
            f"replanned ({why}): " + "; ".join(s.name for s in new_steps),
            severity=Severity.WARNING,
            data={"index": new_steps[0].index, "trigger": trigger, "reason": why},
        )
        return True


def json_object(content: Any) -> dict[str, Any]:
    """A model's answer as a JSON object (a fenced code block is unwrapped).

    Raises:
        ValueError: the answer is not one JSON object.
    """
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


def _merged_inputs(planned: JsonValue, own: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """The task's inputs with the plan's: the task's own win (a plan never rewrites the recorded agent).

    A plan's inputs that are not an object (a string is common) are kept
    whole under ``plan_inputs``.
    """
    if planned is None or planned == {}:
        return own
    extra = planned if isinstance(planned, dict) else {"plan_inputs": planned}
    return {**extra, **own}


def _context_text(context: JsonValue) -> str | None:
    """The plan's context as the task keeps it: text (a JSON value is kept as its JSON text)."""
    if context is None or isinstance(context, str):
        return context
    return json.dumps(context, ensure_ascii=False)
