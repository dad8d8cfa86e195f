"""The divergences a replay check reports, each with the one line that fixes it.

Every fix is the same move (docs/durability.md, "Changing workflow code"):
the old path stays for the runs that recorded it, the new one goes under
``if await ctx.patched("<change-id>"):``. Each line says it for its case.
"""

from __future__ import annotations

import json

from pydantic import JsonValue

from ...records import Operation
from .outcome import Divergence

__all__ = [
    "NOTHING",
    "another_call",
    "another_result",
    "call_after_the_end",
    "described",
    "ended_early",
    "failure",
    "result",
]

NOTHING = "nothing"
SHOWN_CHARS = 60  # of a result or an error, in `recorded` and `requested`
_PATCH = '`if await ctx.patched("<change-id>"):`'


def described(op: Operation) -> str:
    """A recorded operation as a divergence names it: ``"<kind> <name>"``."""
    return f"{op.kind} {op.name}"


def result(value: JsonValue) -> str:
    """A workflow's result as a divergence names it: ``result <its JSON, cut short>``."""
    return "result " + _cut(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def failure(error: BaseException) -> str:
    """A workflow's failure as a divergence names it: ``failure <type>: <message, cut short>``."""
    return "failure " + _cut(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)


def another_call(seq: int, recorded: str, requested: str) -> Divergence:
    """The code asks for `requested` where the journal holds `recorded`."""
    return Divergence(
        seq,
        recorded,
        requested,
        f"keep {recorded} as operation {seq} for the runs that recorded it: put {requested} "
        f"under {_PATCH} and the old code in its else",
    )


def call_after_the_end(seq: int, requested: str) -> Divergence:
    """The code asks for `requested` past the journal of a task that completed without it."""
    return Divergence(
        seq,
        NOTHING,
        requested,
        f"the task completed without {requested}: put it under {_PATCH}, "
        "so the runs recorded before it keep their path",
    )


def ended_early(seq: int, recorded: str, requested: str = NOTHING) -> Divergence:
    """The workflow ended (returned, or raised: `requested`) where the journal goes on with `recorded`."""
    ending = "returns" if requested == NOTHING else "fails"
    return Divergence(
        seq,
        recorded,
        requested,
        f"the workflow now {ending} before {recorded} (operation {seq}), which the recorded run made: "
        f"put the change under {_PATCH} and the old code in its else",
    )


def another_result(seq: int, recorded: str, requested: str) -> Divergence:
    """The replay of a completed task ends otherwise than it ended (another result, or a failure)."""
    return Divergence(
        seq,
        recorded,
        requested,
        f"the same journal now ends with {requested} where the recorded run ended with {recorded}: "
        f"compute it under {_PATCH} and the old way in its else",
    )


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."
