"""Which call results ride on the task's next commit instead of committing alone.

The result of a call whose tool takes its idempotency key, or is safe to
repeat (idempotent or read-only), need not commit the moment the tool
returns: a crash before it commits leaves the call in doubt, exactly as a
crash while the tool ran does, and a resume runs it again with the same key
(`JournalMiddleware`'s in-doubt settling). So the journal hands such a row to
the store to be written first in the task's next fenced transaction
(`ratchet.store.ride_along`): one commit for two writes. An unkeyed tool with
side effects never rides: its window in doubt, which a person must settle,
does not grow. docs/durability.md, "Results that ride along", states the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..faults import crash_point

if TYPE_CHECKING:
    from ..calls import Call

__all__ = ["result_committed", "rides_along"]


def rides_along(call: Call) -> bool:
    """Whether `call`'s result may wait for the task's next commit: its tool is keyed or safe to repeat."""
    tool = call.tool
    return tool is not None and (tool.takes_key or tool.safe_to_repeat)


def result_committed() -> None:
    """Told when a result that rode along committed: the crash point a result's own commit passes."""
    crash_point("after_result_commit")
