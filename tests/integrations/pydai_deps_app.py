"""A RatchetAgent whose tool books through its deps (an open ledger file), for the deps crash test.

``python -m tests.integrations.pydai_deps_app STORE_URL TASK_ID`` runs one
agent run as its own task, with deps this process opened. ``ratchet
resume`` in another process finds the agent here by its name; with
``PYDAI_FACTORY=1`` the agent has a ``deps_factory`` (which opens the ledger
again, as a worker would open its own client), else none.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from pydantic_ai import Agent, RunContext
from pydantic_ai.models.function import FunctionModel

from ratchet.integrations.pydantic_ai import RatchetAgent

# absolute: a worker loads this file by its path
from tests.integrations.pydai_app import LEDGER_ENV, PROMPT, booking_model


@dataclass
class Ledger:
    """The deps: an open file (a live object no store could hold), and who opened it."""

    file: TextIO
    opened_by: str

    @classmethod
    def opened(cls, opened_by: str) -> Ledger:
        return cls(open(os.environ[LEDGER_ENV], "a"), opened_by)  # kept open by the run


agent = Agent(FunctionModel(booking_model), name="deps-booker", deps_type=Ledger)


@agent.tool(metadata={"ratchet": {"risk": "read_only"}})  # read_only: a kill mid-call runs it again
def book(ctx: RunContext[Ledger], item: str) -> str:
    """Book an item: one line in the ledger, saying whose deps wrote it."""
    ctx.deps.file.write(f"{item} {ctx.deps.opened_by}\n")
    ctx.deps.file.flush()
    return f"booked {item}"


def _made_here() -> Ledger:
    return Ledger.opened("factory")


FACTORY = os.environ.get("PYDAI_FACTORY", "0") == "1"
booker = RatchetAgent(agent, deps_factory=_made_here if FACTORY else None)


async def main(store: str, task_id: str) -> None:
    booker.store = store
    result = await booker.run(PROMPT, deps=Ledger.opened("starter"), task_id=task_id)
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
