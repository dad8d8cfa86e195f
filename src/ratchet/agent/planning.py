"""Planning: ask for a plan (repaired a bounded number of times), adopt it, verify steps, replan."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ..errors import OperationFailed, TaskStopped
from ..model import Plan, PlanStep, Severity, Step, StepStatus
from . import prompts
from .run_base import RunBase, assistant_message, short_error

__all__ = ["MAX_PLAN_REPAIRS", "MAX_REPLANS", "Planning", "PlanningFailed"]

MAX_PLAN_REPAIRS = 2
MAX_REPLANS = 2


class PlanningFailed(TaskStopped):
    """The planner gave no valid plan."""


class Planning(RunBase):
    """The planner's side of a run: the plan, the steps made from it, checks and replans."""

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
                return Plan.model_validate(json_object(answer.content))
            except (ValidationError, ValueError, OperationFailed) as error:
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
            # The task's own inputs win: a plan never rewrites the recorded agent.
            task_update={
                "goal": plan.goal,
                "context": plan.context,
                "inputs_params": {**plan.inputs_params, **self.ctx.task.inputs_params},
            },
        )

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
            verdict = json_object(answer.content)
            return bool(verdict["passed"]), str(verdict.get("reason", ""))
        except (ValueError, KeyError, TypeError) as error:
            return False, f"the check gave no verdict ({short_error(error)})"

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
            planned = Plan.model_validate({"steps": json_object(answer.content).get("steps")}).steps
        except (ValidationError, ValueError, OperationFailed, AttributeError) as error:
            await self.record(
                "replan_rejected",
                f"the new plan was not valid ({short_error(error)}); the plan stays as it was",
                severity=Severity.WARNING,
            )
            return None
        return self._steps_from(planned, len(done))


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
