"""Durable pydantic-ai agents: `RatchetAgent` runs a pydantic-ai `Agent` as a Ratchet task.

Needs the ``pydantic-ai`` extra (``pip install 'ratchet-runtime[pydantic-ai]'``).
docs/integrations.md, "pydantic-ai: RatchetAgent", tells the guarantees and limits.
"""

from __future__ import annotations

try:
    import pydantic_ai  # noqa: F401  # the extra's library: one clear error when it is missing
except ImportError as missing:
    from ...errors import MissingExtra

    raise MissingExtra("ratchet.integrations.pydantic_ai", "pydantic-ai", "pydantic-ai") from missing

from ._agent import RatchetAgent
from ._model import RatchetModel
from ._toolset import METADATA_KEY, RatchetToolset, ToolSettings, tool_context

__all__ = ["METADATA_KEY", "RatchetAgent", "RatchetModel", "RatchetToolset", "ToolSettings", "tool_context"]
