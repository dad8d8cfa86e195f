"""A pydantic-ai model whose every request is one journaled Ratchet model call.

`RatchetModel` wraps the agent's model for one run inside a workflow: each
``request`` goes through ``ctx.call_foreign_model`` (budget, journal, retry,
events). The answer is journaled as JSON by pydantic-ai's own codec
(``JSON_CODEC`` over `ModelResponse`), so a replay reads back the same
`ModelResponse` (parts, tool call ids, usage, timestamp) and never calls the
model. The journal shows the request as the model's name, the number of
messages sent and the newest one: the whole history would make the journal
grow with the square of the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pydantic import JsonValue
from pydantic_ai.durable_exec import JSON_CODEC
from pydantic_ai.exceptions import UserError
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from ...engine.calls import Call
from ...engine.context import Context

__all__ = ["RatchetModel"]


class RatchetModel(WrapperModel):
    """`model` with its requests journaled in the task of `context`, as operation `name`.

    Args:
        model: the pydantic-ai model that answers live requests.
        context: the workflow's context the run belongs to.
        name: the journal's name for these requests (``model:AGENT``).
    """

    def __init__(self, model: Model, *, context: Context, name: str) -> None:
        super().__init__(model)
        self._context = context
        self._name = name

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        async def run(call: Call) -> JsonValue:
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            call.meta["usage"] = _usage(response)
            answer: JsonValue = JSON_CODEC.dump(ModelResponse, response)
            return answer

        shown: JsonValue = {
            "model": self.wrapped.model_name,
            "messages": len(messages),
            "newest": ModelMessagesTypeAdapter.dump_python(messages[-1:], mode="json"),
        }
        answer = await self._context.call_foreign_model(self._name, shown, run)
        response: ModelResponse = JSON_CODEC.load(ModelResponse, answer)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncIterator[StreamedResponse]:
        raise UserError(
            "a RatchetAgent run journals whole answers, not streams: use run() "
            "without an event_stream_handler, or run the agent outside Ratchet to stream"
        )
        yield  # pragma: no cover  # makes this a generator, as the context manager needs


def _usage(response: ModelResponse) -> dict[str, JsonValue]:
    """The answer's usage as the budget counts it; its cost when pydantic-ai can price it."""
    cost: float | None
    try:
        cost = float(response.cost().total_price)
    except Exception:  # no price known for the model (genai-prices raises LookupError, or is absent)
        cost = None
    return {
        "prompt_tokens": response.usage.input_tokens,
        "completion_tokens": response.usage.output_tokens,
        "cost": cost,
    }
