"""State patches: the only way an `AgentState` changes, as a list of ops applied all or none.

A patch is a record of its own (journaled, sent to a task's inbox, served
over MCP), so it lives beside the records it changes rather than inside them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from ..errors import StatePatchError
from .base import NonEmpty, Record
from .state import AgentState, ArtifactRef, Fact

__all__ = [
    "AddArtifact",
    "AddOpenQuestions",
    "AppendFacts",
    "PatchOp",
    "ReplacePlan",
    "ResolveQuestion",
    "SetRiskFlag",
    "StatePatch",
]


class AppendFacts(Record):
    op: Literal["append_facts"] = "append_facts"
    facts: list[Fact] = Field(min_length=1)


class ReplacePlan(Record):
    op: Literal["replace_plan"] = "replace_plan"
    plan: list[NonEmpty]


class AddOpenQuestions(Record):
    op: Literal["add_open_questions"] = "add_open_questions"
    questions: list[NonEmpty] = Field(min_length=1)


class ResolveQuestion(Record):
    op: Literal["resolve_question"] = "resolve_question"
    question: NonEmpty
    answer: str | None = None


class AddArtifact(Record):
    op: Literal["add_artifact"] = "add_artifact"
    artifact: ArtifactRef


class SetRiskFlag(Record):
    op: Literal["set_risk_flag"] = "set_risk_flag"
    flag: NonEmpty
    value: bool = True


PatchOp = Annotated[
    AppendFacts | ReplacePlan | AddOpenQuestions | ResolveQuestion | AddArtifact | SetRiskFlag,
    Field(discriminator="op"),
]


class StatePatch(Record):
    """The only way to change an `AgentState`: a list of ops applied all or none."""

    ops: list[PatchOp] = Field(min_length=1)

    def apply(self, state: AgentState) -> AgentState:
        """Return `state` with every op applied; `state` itself is never changed.

        Raises:
            StatePatchError: an op does not apply (e.g. resolving a question
                that is not open); no op of the patch is applied then.
        """
        fields = state.model_dump()
        for op in self.ops:
            _apply_op(fields, op)
        return AgentState.model_validate(fields)


def _apply_op(fields: dict[str, Any], op: PatchOp) -> None:
    match op:
        case AppendFacts(facts=facts):
            fields["known_facts"] = [*fields["known_facts"], *(f.model_dump() for f in facts)]
        case ReplacePlan(plan=plan):
            fields["plan"] = list(plan)
        case AddOpenQuestions(questions=questions):
            known = fields["open_questions"]
            fields["open_questions"] = [*known, *(q for q in questions if q not in known)]
        case ResolveQuestion(question=question):
            if question not in fields["open_questions"]:
                raise StatePatchError(f"resolve_question: {question!r} is not an open question")
            fields["open_questions"] = [q for q in fields["open_questions"] if q != question]
        case AddArtifact(artifact=artifact):
            if any(a["artifact_id"] == artifact.artifact_id for a in fields["artifacts"]):
                raise StatePatchError(f"add_artifact: {artifact.artifact_id!r} is already listed")
            fields["artifacts"] = [*fields["artifacts"], artifact.model_dump()]
        case SetRiskFlag(flag=flag, value=value):
            flags = [f for f in fields["risk_flags"] if f != flag]
            fields["risk_flags"] = [*flags, flag] if value else flags
