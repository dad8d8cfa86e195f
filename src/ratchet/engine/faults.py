"""Named crash points, for the tests that kill a worker at exact moments.

``RATCHET_CRASH_AT=NAME`` (or ``NAME@N``) in a worker's environment makes it
kill itself with SIGKILL the first (or N-th) time it passes the crash point
NAME. Without the variable a crash point costs one dictionary lookup. The
points sit right after (or right before) each commit that matters:

- ``after_intent_commit``: a tool's intent row is committed, the tool not run;
- ``before_result_commit``: the tool ran (its effect happened), its result is
  not committed;
- ``after_result_commit``: the result is committed, nothing after it done;
- ``during_model_call``: a model request is on its way, no answer recorded;
- ``during_backoff``: a failed attempt and its next attempt time are
  committed, the wait has begun;
- ``during_sleep``: a durable sleep's wake-up trigger is committed;
- ``after_receive_commit``: a message is taken and journaled as received,
  nothing after it done.
"""

from __future__ import annotations

import os
import signal

__all__ = ["CRASH_POINTS", "crash_point"]

CRASH_POINTS = (
    "after_intent_commit",
    "before_result_commit",
    "after_result_commit",
    "during_model_call",
    "during_backoff",
    "during_sleep",
    "after_receive_commit",
)

_passes: dict[str, int] = {}


def _read_armed() -> tuple[str, int] | None:
    spec = os.environ.get("RATCHET_CRASH_AT")
    if not spec:
        return None
    name, _, count = spec.partition("@")
    if name not in CRASH_POINTS:
        raise ValueError(f"RATCHET_CRASH_AT names no crash point: {name!r}; known: {CRASH_POINTS}")
    return name, int(count or 1)


# Read once: a worker's environment does not change while it runs.
_armed = _read_armed()


def crash_point(name: str) -> None:
    """Kill this process with SIGKILL if RATCHET_CRASH_AT arms `name` for this pass."""
    armed = _armed
    if armed is None or armed[0] != name:
        return
    _passes[name] = _passes.get(name, 0) + 1
    if _passes[name] == armed[1]:
        os.kill(os.getpid(), signal.SIGKILL)
