"""A pydantic validation error said in one line: where each problem is and what it is.

Tool arguments, a model's structured answer, a plan and an MCP client's
arguments are all checked by pydantic, and each failure goes to someone who
acts on one line (a model, a person, a client), not on pydantic's
multi-line report.
"""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["problems"]


def problems(error: ValidationError, *, whole: str, limit: int | None = None) -> str:
    """``"a.b: msg; c: msg"`` for `error`; a problem with no location names `whole`.

    With `limit`, at most that many problems are said, then how many more there are.
    """
    found = error.errors()
    shown = found if limit is None else found[:limit]
    text = "; ".join(f"{'.'.join(str(part) for part in e['loc']) or whole}: {e['msg']}" for e in shown)
    more = len(found) - len(shown)
    return text + (f" (and {more} more)" if more > 0 else "")
