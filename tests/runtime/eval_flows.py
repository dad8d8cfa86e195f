"""A workflow that does what its model says, for the `Runtime.evaluate` tests: every tool run leaves a line.

`follow_the_model` asks the model once and makes the tool calls it answers
with, all at once (`ctx.call_tools`); `append` writes each run of it to the
file ``EVAL_TOOL_RUNS`` names, and fails for good on ``line='boom'``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ratchet
from ratchet.errors import NonRetryableError, OperationFailed

RUNS_VARIABLE = "EVAL_TOOL_RUNS"


@ratchet.tool
def append(line: str) -> str:
    """Append a line to the runs file."""
    with Path(os.environ[RUNS_VARIABLE]).open("a") as out:
        out.write(line + "\n")
    if line == "boom":
        raise NonRetryableError("no line may say boom")
    return f"appended {line}"


@ratchet.workflow(tools=[append])
async def follow_the_model(ctx: ratchet.Context) -> dict[str, Any]:
    answer = await ctx.call_model({"purpose": "act", "messages": [{"role": "user", "content": "append"}]})
    outcomes = await ctx.call_tools([(call.name, dict(call.arguments)) for call in answer.tool_calls])
    said = [f"failed: {o.error}" if isinstance(o, OperationFailed) else o for o in outcomes]
    return {"content": answer.content, "results": said}
