"""A RatchetAgent whose tool appends to a ledger file, for the crash tests' child processes.

``python -m tests.integrations.pydai_app STORE_URL TASK_ID`` runs one agent
run as its own task; the model (pydantic-ai's `FunctionModel`) books two
items, one tool call each, then answers. ``ratchet resume`` finds the agent
again in this file by its name.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ratchet.integrations.pydantic_ai import RatchetAgent, tool_context

LEDGER_ENV = "PYDAI_LEDGER"
ITEMS = ("flight", "hotel")
PROMPT = "book the trip"


def booking_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Book each item in turn, then say it is done (what it does next depends only on the history)."""
    booked = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
    if booked < len(ITEMS):
        call = ToolCallPart("book", {"item": ITEMS[booked]}, tool_call_id=f"call-{booked}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"booked {booked} items")])


agent = Agent(FunctionModel(booking_model), name="booker")


# PYDAI_KEYED=0: the tool does not say it uses its key, so a call caught in flight waits for a person.
KEYED = os.environ.get("PYDAI_KEYED", "1") == "1"


@agent.tool_plain(metadata={"ratchet": {"uses_key": KEYED}})
def book(item: str) -> str:
    """Book an item: one line in the ledger per booking; a key already booked is not booked again."""
    key = tool_context().idempotency_key
    path = Path(os.environ[LEDGER_ENV])
    seen = path.read_text().split() if path.exists() else []
    if key not in seen:  # what the outside system does with an Idempotency-Key it has seen
        with open(path, "a") as ledger:
            ledger.write(f"{item} {key}\n")
    return f"booked {item}"


booker = RatchetAgent(agent)


async def main(store: str, task_id: str) -> None:
    booker.store = store
    result = await booker.run(PROMPT, task_id=task_id)
    print(result.output)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
