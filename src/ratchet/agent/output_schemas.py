"""The JSON schemas the agent's plan, verify and replan requests ask the model to answer in.

Providers that support structured output hold the answer to them (see
docs/providers.md); the others get them in the prompt. They ask for more than
the loop's validation needs (every field of a step, a reason with every
verdict), since a model constrained by a grammar leaves out whatever is
optional: the loop still validates the answer with `Plan` and reads the
verdict as before, so an answer from a server without structured output that
omits a field is not refused for it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ..providers import OutputSchema

__all__ = ["PLAN_OUTPUT", "REPLAN_OUTPUT", "VERDICT_OUTPUT"]


class _Step(BaseModel):
    model_config = ConfigDict(title="Step")

    step_name: str = Field(min_length=1, description="a short name for the step")
    description: str = Field(description="what the step does")
    action_instruction: str = Field(description="what to do, with which tools")
    validation_instruction: str = Field(description="how to check that the step is done")


class _Plan(BaseModel):
    model_config = ConfigDict(title="Plan")

    goal: str = Field(description="the task's goal, in one sentence")
    inputs_params: dict[str, JsonValue] = Field(
        default_factory=dict, description="the inputs the task starts from"
    )
    context: str = Field(default="", description="what is known about the situation")
    steps: list[_Step] = Field(min_length=1)


class _Replan(BaseModel):
    model_config = ConfigDict(title="Replan")

    steps: list[_Step] = Field(min_length=1, description="the steps that replace the remaining ones")


class _Verdict(BaseModel):
    model_config = ConfigDict(title="Verdict")

    passed: bool = Field(description="whether the step did what its check asks")
    reason: str = Field(description="why, in one sentence")


PLAN_OUTPUT = OutputSchema.of(_Plan, name="plan")
REPLAN_OUTPUT = OutputSchema.of(_Replan, name="replan")
VERDICT_OUTPUT = OutputSchema.of(_Verdict, name="verdict")
