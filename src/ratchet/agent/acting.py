"""Acting: one step's turns with the model, its tool calls, and their outputs fitted to the prompt."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from pydantic import ValidationError

from ..errors import DuplicateRecord, OperationFailed, StoreError
from ..observe.genai import model_tool_calls
from ..providers import ModelResponse
from ..records import Artifact, ArtifactRef, Severity, Step, StepStatus
from . import prompts
from .context_slice import state_slice
from .controls import CONTROL_NAMES, CONTROL_SCHEMAS, Control, read_control
from .findings import findings_text, plan_overview, report_share
from .memory import memory_text
from .run_base import RunBase, StepFailed, assistant_message, short_error

__all__ = ["NOTE", "Acting"]

NOTE = "note"  # the name of the messages an agent takes at each act turn (`ratchet send TASK note TEXT`)


class Acting(RunBase):
    """The doer's side of a run: the act turns of a step and the calls they ask for."""

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools offered in act turns: the task's, then the agent's own built-in ones."""
        return [t.schema() for t in self.ctx.tools.values()] + [
            prompts.UPDATE_STATE_SCHEMA,
            prompts.ASK_USER_SCHEMA,
            *CONTROL_SCHEMAS,
        ]

    async def act(self, step: Step, feedback: str) -> str | Control:
        """The step's act turns: its report, or the control the model asked for (replan already made)."""
        ctx, spec = self.ctx, self.spec
        budget = ctx.task.budget.max_artifact_bytes_in_context
        findings = memory_text(self.memory) + findings_text(self.steps, self.reports, report_share(budget))
        system = prompts.ACT.format(
            instructions=spec.instructions,
            goal=ctx.task.goal or ctx.task.instruction,
            overview=plan_overview(self.steps),
            number=step.index + 1,
            total=len(self.steps),
            name=step.name,
            description=step.description,
            findings=findings,
            # The reports and the state slice share the budget: the slice gets what the reports left.
            state=state_slice(ctx.state, step, max(0, budget - len(findings.encode("utf-8")))),
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
            told = await self.take_notes()
            messages += told
            await self.keep_messages(told)
            answer = await self.call_model({"purpose": "act", "messages": messages, "tools": self.schemas})
            if len(answer.tool_calls) > spec.max_tool_calls_per_answer:
                refusal = await self.refuse_tool_calls(answer)
                messages += refusal
                await self.keep_messages(refusal)
                continue
            said = assistant_message(answer)
            control, replies = await self.run_tool_calls(answer, step)
            messages += [said, *replies]
            await self.keep_messages([said, *replies])
            if control is not None:
                return control
            if not answer.tool_calls:
                return answer.content if isinstance(answer.content, str) else json.dumps(answer.content)
        raise StepFailed(
            f"step {step.index + 1} ({step.name}) used its {spec.max_turns_per_step} turns without finishing"
        )

    async def take_notes(self) -> list[dict[str, Any]]:
        """The state patches and the messages named `note` sent to the task since the last turn, as
        user messages (docs/agent.md).

        Taken without waiting, journaled only when there was one; each is
        new information for a replan when ``replan_on`` lists ``"notes"``.
        """
        told = [
            prompts.STATE_PATCHED.format(
                who=f"Agent {p.by}" if p.by else "A person",
                changes=json.dumps(p.patch.model_dump(mode="json")["ops"], ensure_ascii=False),
            )
            for p in await self.ctx.take_outside_patches()  # patch_state over MCP (docs/mcp.md)
        ]
        notes = [
            n if isinstance(n, str) else json.dumps(n, ensure_ascii=False)
            for n in await self.ctx.take_messages(NOTE)
        ]
        if (notes or told) and "notes" in self.spec.replan_on:
            self.news += [f"a note arrived: {note}" for note in notes] + told
        told += [prompts.NOTE.format(note=note) for note in notes]
        return [{"role": "user", "content": text} for text in told]

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

    async def run_tool_calls(
        self, answer: ModelResponse, step: Step
    ) -> tuple[Control | None, list[dict[str, Any]]]:
        """Run an answer's tool calls; the first control it asks for (if taken), and the replies."""
        ctx = self.ctx
        replies: dict[str, str] = {}
        real, controls = [], []
        for call in answer.tool_calls:
            if call.name == "update_state":
                replies[call.id] = await self.update_state(call.arguments)
            elif call.name == "ask_user":
                replies[call.id] = await self.ask_user(call.arguments)
            elif call.name in CONTROL_NAMES:
                controls.append(call)
            elif call.name not in ctx.tools:
                known = ", ".join(sorted(ctx.tools))
                replies[call.id] = f"error: there is no tool named {call.name!r}; the tools are: {known}"
            else:
                real.append(call)
        first = ctx.next_seq  # call_tools numbers the calls from here, in order
        with model_tool_calls({first + offset: call.id for offset, call in enumerate(real)}):  # for spans
            outcomes = await ctx.call_tools([(c.name, c.arguments) for c in real])
        for offset, (call, outcome) in enumerate(zip(real, outcomes, strict=True)):
            if isinstance(outcome, OperationFailed):
                replies[call.id] = f"error: {outcome.error_type}: {outcome.error}"
            else:
                replies[call.id] = await self.fit(call.name, outcome, ctx.result_artifact(first + offset))
        # A control acts after the answer's other calls ran; one per answer, the first that is valid.
        taken: Control | None = None
        for call in controls:
            if taken is not None:
                replies[call.id] = f"error: {taken.name} was taken in this answer; {call.name} was not"
                continue
            control = read_control(call)
            if isinstance(control, str):
                replies[call.id] = control
            else:
                replies[call.id], accepted = await self.take_control(control, step)
                taken = control if accepted else None
        return taken, [
            {"role": "tool", "tool_call_id": c.id, "name": c.name, "content": replies[c.id]}
            for c in answer.tool_calls
        ]

    async def take_control(self, control: Control, step: Step) -> tuple[str, bool]:
        """What the model hears of its control, and whether the step's turns end with it.

        A replan is made here, while the step is current: if it gives no new
        plan (or none is left), the model hears why and carries on.
        """
        if control.name != "replan":
            return _CONTROL_REPLIES[control.name], True
        if not self.may_replan:
            return (
                f"error: the plan was replaced {self.replans} times already, the most allowed; "
                "carry on with this step, skip it, or fail the task",
                False,
            )
        abandoned = step.transition(StepStatus.CANCELLED, failure_message=f"abandoned: {control.text}")
        why = f"the agent asked for a new plan during step {step.index + 1} ({step.name}): {control.text}"
        kept = [*self.steps[: step.index], abandoned]
        if await self.replace_rest(why, kept, "the abandoned step and the ones after it", "agent"):
            return "the plan was replaced: this step ends here, and the new plan's first step starts", True
        return "error: no valid new plan came back; the plan stays as it was: carry on with this step", False

    async def update_state(self, arguments: dict[str, Any]) -> str:
        ops = arguments.get("ops")
        if isinstance(ops, list) and any(isinstance(o, dict) and o.get("op") == "replace_plan" for o in ops):
            # The steps are the plan's one source of truth: a new plan comes from the planner only.
            return (
                "error: the plan is not changed with update_state (nothing of this patch was applied); "
                "to change the rest of the plan, call replan with your reason"
            )
        try:
            await self.ctx.apply_patch(arguments)
        except (ValidationError, ValueError) as error:
            return f"error: the state patch is not valid: {short_error(error)}"
        except StoreError:
            raise  # not the model's to hear: the task stops, resumable
        except Exception as error:  # StatePatchError: the patch does not apply
            return f"error: {error}"
        if "facts" in self.spec.replan_on:
            facts = [f for o in ops or [] if o.get("op") == "append_facts" for f in o["facts"]]
            self.news += [f"new fact {f['key']}: {json.dumps(f['value'])}" for f in facts]
        return "state updated"

    async def ask_user(self, arguments: dict[str, Any]) -> str:
        question = arguments.get("question")
        if not isinstance(question, str) or not question.strip():
            return 'error: ask_user needs a question: {"question": "..."}'
        answer = await self.ctx.ask_user(question.strip())
        if "answers" in self.spec.replan_on:
            self.news.append(f"the person answered {question.strip()!r}: {answer}")
        return answer

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
            step=ctx.current_step,
        )
        if not ctx.replaying:
            with contextlib.suppress(DuplicateRecord):  # stored before a crash, on an earlier run
                await ctx.store.put_artifact(artifact, body, fence=ctx.lease)
        return artifact.ref


_CONTROL_REPLIES = {
    "skip_step": "the step is skipped; the next step starts",
    "complete_task": "the task is completed with this result",
    "fail_task": "the task is failed with this reason",
}
