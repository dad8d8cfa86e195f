"""Scorers: how a new run is judged against the recorded one (docs/evals.md, "Scorers").

- ``exact`` (the default): the same tool calls, names and arguments, in the
  same order, the same ending and the same final answer;
- ``json-diff``: the same ending and a final answer of the same structure
  and values, every difference named by its path (``$.items[2].price``);
- ``module:function`` (or ``file.py:function``): the user's callable, loaded
  under the code trust workflows load under, called as
  ``function(recorded, candidate)`` with two `EvalRun` records; it returns a
  bool (match or not), a number from 0 to 1 (a match is 1), or a dict
  ``{"match": bool, "score": number, "differences": [str, ...]}``.

A scorer judges a new run that ran to its end. One that stopped at a tool
call the recording lacks, or to wait on a person, is a diff whatever the
scorer (it has no final answer to judge).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from ...engine.workflow import load_module
from ...errors import CodeUnavailable, InputError
from ...trust.code import CodeTrust
from .report import EvalRun, Verdict

__all__ = ["EXACT", "JSON_DIFF", "Score", "Scorer", "judge", "load_scorer"]

EXACT = "exact"
JSON_DIFF = "json-diff"

ScorerFunction = Callable[[EvalRun, EvalRun], Any]


@dataclass(frozen=True)
class Score:
    verdict: Verdict
    score: float
    differences: list[str]


@dataclass(frozen=True)
class Scorer:
    """A scorer as named (``exact``, ``json-diff`` or the user's reference) and the function it is."""

    name: str
    function: ScorerFunction


def load_scorer(reference: str | None, trust: CodeTrust) -> Scorer:
    """The scorer `reference` names (None: ``exact``).

    Raises:
        InputError: it names no built-in scorer and no callable `trust` admits (one line).
    """
    name = (reference or EXACT).strip()
    if name == EXACT:
        return Scorer(EXACT, exact)
    if name == JSON_DIFF:
        return Scorer(JSON_DIFF, json_diff)
    source, sep, attribute = name.rpartition(":")
    if not sep or not source or not attribute:
        raise InputError(
            f"--scorer {name!r}: use exact, json-diff, or module:function (file.py:function) of your own"
        )
    try:
        module = load_module(source, trust)
    except CodeUnavailable as problem:
        raise InputError(f"--scorer {name}: {problem}") from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
    if not callable(found):
        raise InputError(f"--scorer {name}: {source} has no function {attribute!r}")
    if inspect.iscoroutinefunction(found):
        raise InputError(f"--scorer {name}: a scorer is a plain function, not async")
    return Scorer(name, found)


def judge(scorer: Scorer, recorded: EvalRun, candidate: EvalRun) -> Score:
    """`scorer`'s verdict on `candidate` against `recorded`; a new run that did not end is a diff."""
    if candidate.stopped is not None:
        return Score(Verdict.DIFF, 0.0, [candidate.stopped])
    try:
        given = scorer.function(recorded, candidate)
    except Exception as error:  # the user's code: its failure is this task's diff, not the eval's end
        return Score(Verdict.DIFF, 0.0, [f"the scorer raised {type(error).__name__}: {error}"])
    return _read(scorer.name, given)


def _read(name: str, given: Any) -> Score:
    """A scorer's answer as a `Score`: a bool, a number from 0 to 1, or a dict."""
    if isinstance(given, Score):
        return given
    if isinstance(given, bool):
        return Score(Verdict.MATCH if given else Verdict.DIFF, 1.0 if given else 0.0, [])
    if isinstance(given, (int, float)) and 0 <= given <= 1:
        return Score(Verdict.MATCH if given == 1 else Verdict.DIFF, float(given), [])
    if isinstance(given, dict) and isinstance(given.get("match"), bool):
        match = given["match"]
        score = given.get("score", 1.0 if match else 0.0)
        differences = given.get("differences", [])
        if isinstance(score, (int, float)) and not isinstance(score, bool) and isinstance(differences, list):
            return Score(
                Verdict.MATCH if match else Verdict.DIFF, float(score), [str(d) for d in differences]
            )
    return Score(
        Verdict.DIFF,
        0.0,
        [
            f"the scorer {name} returned {_short(given)}: return a bool, a number from 0 to 1, "
            'or {"match": bool, "score": number, "differences": [text]}'
        ],
    )


# --------------------------------------------------------------------------- the built-in scorers


def exact(recorded: EvalRun, candidate: EvalRun) -> Score:
    """The same tool calls (names and arguments, in order), the same ending, the same final answer."""
    differences = _calls_differ(recorded, candidate) + _ending_differs(recorded, candidate)
    if not differences and recorded.result != candidate.result:
        differences.append(
            f"final answer: recorded {_short(recorded.result)}, new {_short(candidate.result)}"
        )
    return Score(Verdict.DIFF if differences else Verdict.MATCH, 0.0 if differences else 1.0, differences)


def json_diff(recorded: EvalRun, candidate: EvalRun) -> Score:
    """The same ending and a final answer of the same structure and values; each difference by its path."""
    differences = _ending_differs(recorded, candidate)
    if not differences:
        differences = list(structural_diff(recorded.result, candidate.result))
    return Score(Verdict.DIFF if differences else Verdict.MATCH, 0.0 if differences else 1.0, differences)


def structural_diff(old: JsonValue, new: JsonValue, path: str = "$") -> list[str]:
    """Every place two JSON values differ, as ``path: recorded X, new Y`` (or only in one of them)."""
    if isinstance(old, dict) and isinstance(new, dict):
        found: list[str] = []
        for key in sorted(old.keys() | new.keys()):
            where = f"{path}.{key}"
            if key not in new:
                found.append(f"{where}: only in the recording ({_short(old[key])})")
            elif key not in old:
                found.append(f"{where}: only in the new run ({_short(new[key])})")
            else:
                found += structural_diff(old[key], new[key], where)
        return found
    if isinstance(old, list) and isinstance(new, list):
        found = []
        for index in range(max(len(old), len(new))):
            where = f"{path}[{index}]"
            if index >= len(new):
                found.append(f"{where}: only in the recording ({_short(old[index])})")
            elif index >= len(old):
                found.append(f"{where}: only in the new run ({_short(new[index])})")
            else:
                found += structural_diff(old[index], new[index], where)
        return found
    if old == new and type(old) is type(new):
        return []
    return [f"{path}: recorded {_short(old)}, new {_short(new)}"]


def _calls_differ(recorded: EvalRun, candidate: EvalRun) -> list[str]:
    old, new = recorded.tool_calls, candidate.tool_calls
    for index, (was, now) in enumerate(zip(old, new, strict=False)):
        if (was.name, was.arguments) != (now.name, now.arguments):
            return [f"tool call {index + 1}: recorded {was.described()}, new {now.described()}"]
    if len(old) != len(new):
        return [f"the new run made {len(new)} tool call(s), the recording {len(old)}"]
    return []


def _ending_differs(recorded: EvalRun, candidate: EvalRun) -> list[str]:
    if recorded.status == candidate.status:
        return []
    said = f": {candidate.error}" if candidate.error else ""
    return [f"ending: recorded {recorded.status}, new {candidate.status}{said}"]


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
