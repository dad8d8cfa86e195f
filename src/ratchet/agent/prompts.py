"""What the agent says to its model, purpose by purpose."""

from __future__ import annotations

from typing import Any

from ..records import Step

PLAN = """You are the planner of an agent. {instructions}
Break the user's instruction into a short list of concrete steps the agent can carry out
with its tools ({tools}). Answer with one JSON object only:
{{"goal": "...", "inputs_params": {{}}, "context": "...",
  "steps": [{{"step_name": "...", "description": "...", "action_instruction": "...",
             "validation_instruction": "how to check the step worked, or empty"}}]}}"""

REPAIR = """That plan is not valid: {error}
Answer again with one JSON object of the same shape, with at least one step."""

ACT = """You are an agent carrying out one step of a plan. {instructions}
Goal: {goal}
The plan:
{overview}
Current step {number} of {total}: {name}: {description}
{findings}{state}Use the tools to do the step; when it is done, answer with a short report and no tool calls.
To record facts or questions in your working memory, call update_state with a StatePatch.
When only a person can tell you something you need, call ask_user with your question.
If the plan no longer fits, call replan with your reason; if this step is not needed, call skip_step;
if the whole task is done, call complete_task with its result; if it cannot be done, call fail_task."""

VERIFY = """You check whether a step of a plan was done. Answer with one JSON object only:
{"passed": true or false, "reason": "..."}"""

REPLAN = """You are the planner of an agent. The rest of the plan must change: {why}
The plan so far:
{overview}
Completed steps (kept as they are): {done}
{findings}Answer with one JSON object only:
{{"steps": [ ...the new steps that replace {replaced}, same shape as before... ]}}"""

TOO_MANY_TOOL_CALLS = """Your answer asked for {asked} tool calls at once; at most {limit} may be asked
in one answer, so none of them ran. Ask for at most {limit} at once (the rest in later answers),
or answer with your report if the step is done."""

UPDATE_STATE_SCHEMA: dict[str, Any] = {
    "name": "update_state",
    "description": "Change the agent's working memory (facts, open questions, risk flags) with a StatePatch "
    "(the plan is changed with replan, not here).",
    "parameters": {
        "type": "object",
        "properties": {"ops": {"type": "array", "items": {"type": "object"}}},
        "required": ["ops"],
    },
}

ASK_USER_SCHEMA: dict[str, Any] = {
    "name": "ask_user",
    "description": "Ask the person you work for a question; the answer comes back as the result "
    "(it may take a while: the task waits for it).",
    "parameters": {
        "type": "object",
        "properties": {"question": {"type": "string", "description": "The question, on its own."}},
        "required": ["question"],
    },
}


def step_line(step: Step) -> str:
    return f"{step.index + 1}. {step.name} [{step.status}]"


NOTE = "A note was sent to you while you work on this task (take it into account from now on): {note}"

STATE_PATCHED = (
    "{who} changed this task's working memory while you work on it (take it into account from now "
    "on): {changes}"
)
