"""Tools with constrained arguments, for the tests of tool schemas (loaded by module name)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

import ratchet
from ratchet import ToolContext

from .agent_tools import ledger


@ratchet.tool(risk="write_local")
def pick(n: Annotated[int, Field(ge=1, le=10)], call: ToolContext) -> int:
    """Pick n items.

    Args:
        n: how many items, from 1 to 10.
    """
    ledger().invoked("pick", call.idempotency_key)
    return n
