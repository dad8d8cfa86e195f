"""A task's working memory (`AgentState`) and the artifacts it keeps out of the prompt."""

from __future__ import annotations

import datetime as dt

from pydantic import Field, JsonValue

from ..policy import Budget
from .base import NonEmpty, Record, utcnow
from .people import Constraints

__all__ = ["AgentState", "Artifact", "ArtifactRef", "Fact"]


class Fact(Record):
    key: NonEmpty
    value: JsonValue
    source: str = "agent"


class ArtifactRef(Record):
    """What the prompt carries of an artifact: its id and summary, never its body."""

    artifact_id: NonEmpty
    type: str
    summary: str
    bytes: int = Field(ge=0)
    step: int | None = Field(default=None, ge=0)  # the index of the step that made it


class AgentState(Record):
    """The task's working memory. Changed only by applying a `ratchet.records.state_patch.StatePatch`."""

    goal: str | None = None
    constraints: Constraints = Field(default_factory=Constraints)
    budget: Budget = Field(default_factory=Budget)
    plan: list[str] = Field(default_factory=list)
    known_facts: list[Fact] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    risk_flags: list[str] = Field(default_factory=list)


class Artifact(Record):
    """A large value kept out of the prompt; its body is read separately."""

    id: NonEmpty
    task_id: NonEmpty
    type: str
    summary: str
    bytes: int = Field(ge=0)
    created_at: dt.datetime = Field(default_factory=utcnow)
    step: int | None = Field(default=None, ge=0)  # the index of the step that made it

    @property
    def ref(self) -> ArtifactRef:
        return ArtifactRef(artifact_id=self.id, **self.model_dump(exclude={"id", "task_id", "created_at"}))
