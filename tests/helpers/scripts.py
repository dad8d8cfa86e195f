"""Builders of the scripted model's answers for a planning agent: plans, tool calls, reports, verdicts.

A script maps each purpose (``plan``, ``act``, ``verify`` ...) to the answers
the scripted model gives, in order; these build the entries.
"""

from __future__ import annotations

from typing import Any


def plan_step(name: str, check: str | None = None) -> dict[str, str]:
    """A step as the planner writes it; `check` defaults to one, "" means none."""
    return {
        "step_name": name,
        "description": f"{name} (description)",
        "action_instruction": f"do: {name}",
        "validation_instruction": f"check: {name}" if check is None else check,
    }


def plan(*names: str, goal: str = "X is fast again", check: str | None = None) -> dict[str, Any]:
    """A plan entry of a script with one step per name."""
    return {
        "content": {
            "goal": goal,
            "context": "a slow service",
            "steps": [plan_step(name, check) for name in names],
        }
    }


def calls(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An act entry asking for tool calls."""
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in pairs]}


def say(text: str) -> dict[str, Any]:
    """An act entry that answers without tool calls (the step's report)."""
    return {"content": text}


def verdict(passed: bool, reason: str = "") -> dict[str, Any]:
    return {"content": {"passed": passed, "reason": reason or ("ok" if passed else "not done")}}
