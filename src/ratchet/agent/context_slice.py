"""The context slice: the part of the working memory a step's prompt carries, within a byte budget.

A task's working memory (`AgentState`) grows without bound: facts, open
questions, artifacts. A step's prompt carries a slice of it that never
exceeds ``Budget.max_artifact_bytes_in_context`` bytes of UTF-8 text,
everything it carries counted: headings, entries and the note on what was
left out. Entries go in whole, in this order of precedence, while they fit:

1. the open questions;
2. the artifacts the current step references (`references`): those it made,
   and those its description or instructions name by id;
3. the known facts, newest first;
4. the other artifacts, newest first.

An entry that does not fit is left out and the next one is tried, so one
large fact does not hide every older one. When anything is left out, the
slice ends with a note saying how many facts, questions and artifacts were,
and how to read them: ``read_state`` lists the whole working memory, a page
at a time, and ``read_artifact`` reads an artifact's body.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import JsonValue

from ..records import AgentState, ArtifactRef, Fact, RiskLevel, Step
from ..store import StateStore
from ..tools import Tool, ToolContext, tool

__all__ = ["READ_STATE_PAGE", "read_state_tool", "references", "state_slice"]

READ_STATE_PAGE = 20
"""How many entries `read_state` returns at most by default."""


def references(step: Step, artifact: ArtifactRef) -> bool:
    """Whether `step` references `artifact`: it made it, or its description or instructions name its id.

    An artifact made by an earlier attempt of the same step counts as made by
    it (the attempts share the step's index); one named by a replanned step,
    whatever made it, counts as referenced.
    """
    if artifact.step is not None and artifact.step == step.index:
        return True
    # The id as a whole word: naming ``...-artifact-10`` does not reference ``...-artifact-1``.
    named = re.compile(rf"(?<![\w-]){re.escape(artifact.artifact_id)}(?![\w-])")
    texts = (step.description, step.action_instruction, step.validation_instruction)
    return any(named.search(text) for text in texts)


def state_slice(state: AgentState, step: Step, max_bytes: int) -> str:
    """The slice of `state` the prompt of `step` carries: at most `max_bytes` bytes of UTF-8.

    Returns the text, one line an entry under a heading for each kind, each
    line ended by a newline; empty when the state holds nothing (or when
    not even the note on what was left out fits in `max_bytes`).
    """
    questions = [f"- {q}" for q in state.open_questions]
    artifacts = list(reversed(state.artifacts))  # newest first
    own = [_artifact_line(a) for a in artifacts if references(step, a)]
    others = [_artifact_line(a) for a in artifacts if not references(step, a)]
    facts = [_fact_line(f) for f in reversed(state.known_facts)]
    sections = [
        ("Open questions:", questions),
        ("Artifacts of this step (read one with read_artifact):", own),
        ("Known facts (newest first):", facts),
        ("Other artifacts, newest first (read one with read_artifact):", others),
    ]
    whole = _render([(heading, lines) for heading, lines in sections], "")
    if _size(whole) <= max_bytes:
        return whole
    kept: list[list[str]] = [[] for _ in sections]
    used = 0
    # The note is counted at its largest (everything left out), so whatever goes in, it still fits.
    budget = max_bytes - _size(_left_out_note(len(questions), len(facts), len(own) + len(others), max_bytes))
    if budget < 0:
        return ""
    for index, (heading, lines) in enumerate(sections):
        for line in lines:
            cost = _size(line) + 1 + (0 if kept[index] else _size(heading) + 1)
            if used + cost <= budget:
                kept[index].append(line)
                used += cost
    note = _left_out_note(
        len(questions) - len(kept[0]),
        len(facts) - len(kept[2]),
        len(own) + len(others) - len(kept[1]) - len(kept[3]),
        max_bytes,
    )
    return _render([(heading, kept[i]) for i, (heading, _) in enumerate(sections)], note)


def _artifact_line(artifact: ArtifactRef) -> str:
    made = "" if artifact.step is None else f", made by step {artifact.step + 1}"
    summary = " ".join(artifact.summary.split())
    return f"- {artifact.artifact_id} ({artifact.type}, {artifact.bytes} bytes{made}): {summary}"


def _fact_line(fact: Fact) -> str:
    return f"- {fact.key}: {json.dumps(fact.value, ensure_ascii=False)}"


def _left_out_note(questions: int, facts: int, artifacts: int, max_bytes: int) -> str:
    counts = [(questions, "open question"), (facts, "fact"), (artifacts, "artifact")]
    left = ", ".join(f"{count} {what}{'' if count == 1 else 's'}" for count, what in counts if count)
    if not left:
        return ""
    return (
        f"Left out to keep this within {max_bytes} bytes: {left}. "
        "read_state lists them all; read_artifact reads an artifact."
    )


def _render(sections: list[tuple[str, list[str]]], note: str) -> str:
    text = "".join(
        heading + "\n" + "".join(line + "\n" for line in lines) for heading, lines in sections if lines
    )
    return text + (note + "\n" if note else "")


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def read_state_tool(store: StateStore) -> Tool:
    """The built-in tool that reads the task's whole working memory, a page at a time."""

    @tool(name="read_state", risk=RiskLevel.READ_ONLY)
    async def read_state(
        ctx: ToolContext,
        part: Literal["facts", "open_questions", "artifacts"],
        offset: int = 0,
        limit: int = READ_STATE_PAGE,
    ) -> dict[str, Any]:
        """Read your working memory in full, a page at a time (the prompt carries only a part of it).

        Args:
            part: which part: the known facts, the open questions or the artifacts, newest first.
            offset: how many entries of that part to skip.
            limit: how many entries to return at most (fewer when more would not fit the prompt).
        """
        task = await store.get_task(ctx.task_id)
        state = task.state
        entries: list[JsonValue]
        if part == "facts":
            entries = [f.model_dump(mode="json") for f in reversed(state.known_facts)]
        elif part == "artifacts":
            entries = [a.model_dump(mode="json") for a in reversed(state.artifacts)]
        else:
            entries = list(state.open_questions)
        start = max(0, offset)
        taken: list[JsonValue] = []
        page: dict[str, Any] = {"part": part, "total": len(entries), "offset": start, "entries": taken}
        fits = task.budget.max_artifact_bytes_in_context - len('"next_offset": 0000000000, ')
        # A page fits the context budget, so it reaches the model whole rather than as another
        # artifact; it holds at least one entry, or paging would never move on.
        for entry in entries[start : start + max(1, limit)]:
            taken.append(entry)
            if len(taken) > 1 and _size(json.dumps(page, ensure_ascii=False)) > fits:
                taken.pop()
                break
        end = start + len(taken)
        page["next_offset"] = end if end < len(entries) else None
        return page

    return read_state
