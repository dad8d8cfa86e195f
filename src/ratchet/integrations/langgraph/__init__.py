"""LangGraph on Ratchet's stores: `RatchetSaver`, a checkpointer (extra ``[langgraph]``).

See docs/integrations.md: how values are stored, and the limits.
"""

from __future__ import annotations

from ...errors import MissingExtra

try:
    import langgraph.checkpoint.base  # noqa: F401  (the extra's library, checked before anything uses it)
except ImportError as exc:
    raise MissingExtra("ratchet.integrations.langgraph", "LangGraph", "langgraph") from exc

from ._saver import RatchetSaver

__all__ = ["RatchetSaver"]
