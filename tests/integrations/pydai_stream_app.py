"""A RatchetAgent run streamed as its own task, for the kill-mid-stream test's child processes.

``python -m tests.integrations.pydai_stream_app STORE_URL TASK_ID`` streams one
run (`RatchetAgent.run_stream`), printing each piece of text as it arrives and
then the output. With ``PYDAI_STALL_AFTER=N`` the model stops after its N-th
piece and waits for ever, for the test to kill the process there. ``ratchet
resume`` finds the agent again in this module by its name.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ratchet.integrations.pydantic_ai import RatchetAgent
from tests.integrations.pydai_support import PIECES  # absolute: a worker loads this file by its path

PROMPT = "book the trip"
STALL_ENV = "PYDAI_STALL_AFTER"


async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    """The answer a piece at a time; stalled after the pieces the environment says, when it says."""
    stall = int(os.environ.get(STALL_ENV, "0"))
    for count, piece in enumerate(PIECES, start=1):
        yield piece
        if count == stall:
            await asyncio.Event().wait()  # a model that stopped writing: the test kills the process here


def whole(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart("".join(PIECES))])


writer = RatchetAgent(Agent(FunctionModel(whole, stream_function=stream), name="writer"))


async def main(store: str, task_id: str) -> None:
    writer.store = store
    async with writer.run_stream(PROMPT, task_id=task_id) as result:
        async for piece in result.stream_text(delta=True, debounce_by=None):
            print(f"piece {piece!r}", flush=True)
        print(f"output {await result.get_output()!r}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
