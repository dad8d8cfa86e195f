"""A compaction of the user's own, loaded by reference: it keeps the head and the newest two
messages, and summarizes nothing (no model call)."""

from __future__ import annotations

from typing import Any

from ratchet.engine.calls.compaction import Compaction


class KeepEnds:
    """Drop the middle of a long history, with no summary."""

    async def before_model(self, request: Any, host: Any) -> Any:
        messages = request.messages
        head = Compaction.pinned(messages)
        if len(messages) <= head + 2:
            return request
        return request.model_copy(update={"messages": [*messages[:head], *messages[-2:]]})


keep_ends = KeepEnds()
