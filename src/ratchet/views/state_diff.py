"""What changed in a task's agent state between two points: two checkpoints, or one and now.

The agent state (`AgentState`) changes only by patches that add (facts,
questions, artifacts, risk flags) or replace (the plan, the goal), so a diff
says what each list gained and lost. Facts are told by key: a fact appended
again under its key is what the agent knows now, so a key whose newest value
differs is a fact that ``changed``. ``GET /api/tasks/{id}/state-diff``
answers with `state_diff_json`; the dashboard's time-travel panel draws it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..records import AgentState

__all__ = ["LIST_FIELDS", "state_diff_json"]

# The lists of the state a diff compares: facts by key, the others each item by its JSON.
LIST_FIELDS = ("known_facts", "open_questions", "artifacts", "risk_flags", "plan")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _gained_and_lost(before: Sequence[Any], after: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """What `after` has that `before` has not, and the other way round; a repeated item counts each time."""
    left = [_key(item) for item in before]
    added = []
    for item in after:
        key = _key(item)
        if key in left:
            left.remove(key)
        else:
            added.append(item)
    right = [_key(item) for item in after]
    removed = []
    for item in before:
        key = _key(item)
        if key in right:
            right.remove(key)
        else:
            removed.append(item)
    return added, removed


def _latest_facts(facts: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each key's newest fact: a fact appended again under its key is what the agent knows now."""
    return {fact["key"]: fact for fact in facts}


def _fact_diff(before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Facts by key: those of a new key (``added``), of a key gone (``removed``), of a key whose newest
    value differs (``changed``: key, from, to)."""
    old, new = _latest_facts(before), _latest_facts(after)
    return {
        "added": [fact for key, fact in new.items() if key not in old],
        "removed": [fact for key, fact in old.items() if key not in new],
        "changed": [
            {"key": key, "from": old[key]["value"], "to": fact["value"]}
            for key, fact in new.items()
            if key in old and _key(old[key]["value"]) != _key(fact["value"])
        ],
    }


def state_diff_json(before: AgentState, after: AgentState) -> dict[str, Any]:
    """The diff of two agent states: for each list its ``added`` and ``removed`` items (facts by key,
    with those whose newest value ``changed``), and the ``goal`` when it changed (``{"from", "to"}``,
    else null).

    ``same`` is true when nothing differs.
    """
    old, new = before.model_dump(mode="json"), after.model_dump(mode="json")
    shown: dict[str, Any] = {"known_facts": _fact_diff(old["known_facts"], new["known_facts"])}
    for name in LIST_FIELDS[1:]:
        added, removed = _gained_and_lost(old[name], new[name])
        shown[name] = {"added": added, "removed": removed}
    shown["goal"] = None if old["goal"] == new["goal"] else {"from": old["goal"], "to": new["goal"]}
    shown["same"] = shown["goal"] is None and not any(
        part for name in LIST_FIELDS for part in shown[name].values()
    )
    return shown
