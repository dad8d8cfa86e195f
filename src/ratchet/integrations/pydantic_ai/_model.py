"""A pydantic-ai model whose every request is one journaled Ratchet model call.

`RatchetModel` wraps the agent's model for one run inside a workflow: each
``request`` goes through ``ctx.call_foreign_model`` (budget, journal, retry,
events). The answer is journaled as JSON by pydantic-ai's own codec
(``JSON_CODEC`` over `ModelResponse`), so a replay reads back the same
`ModelResponse` (parts, tool call ids, usage, timestamp) and never calls the
model. A streamed request (``request_stream``, which ``Agent.run_stream``
and an ``event_stream_handler`` use) is the same one journaled call: live, its
events reach pydantic-ai as the wrapped model writes them (`JournaledStream`);
replayed, the journaled answer is given whole. The journal shows the request
as the model's name, the number of messages sent and the newest one: the
whole history would make the journal grow with the square of the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

from pydantic import JsonValue
from pydantic_ai.durable_exec import JSON_CODEC
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import CompletedStreamedResponse, Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import RunContext

from ...engine.calls import Call
from ...engine.context import Context
from ...engine.streams import TextSink
from ._streaming import JournaledStream, text_of
from ._tracing import mark_span, pydantic_ai_reports, ran, reported_once

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
        by_pydantic_ai = pydantic_ai_reports()
        live = False

        async def run(call: Call) -> JsonValue:
            nonlocal live
            live = True
            _marked(call, by_pydantic_ai)
            response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            return _journaled(call, response)

        try:
            with reported_once(by_pydantic_ai):
                answer = await self._call(messages, run)
        finally:
            ran(live)
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
        """The request as one journaled model call whose live attempts stream.

        Live, the wrapped model's stream is handed to pydantic-ai event by event
        (`JournaledStream`), its text written to the task's stream (engine/streams.py:
        in batches, each attempt between its marks, unless ``ctx.streaming`` is off),
        and its whole answer journaled once, as `request`'s is.
        Replayed, the wrapped model is not called: the journaled answer is given as
        pydantic-ai gives a completed one (one start event per part).
        """
        stream = JournaledStream(model_request_parameters, model=self.wrapped)
        live = asyncio.Event()

        async def answer(on_text: TextSink) -> ModelResponse:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as source:
                async for event in source:
                    stream.forward(event)
                    await on_text(text_of(event))
                return source.get()

        by_pydantic_ai = pydantic_ai_reports(run_context)

        async def run(call: Call) -> JsonValue:
            live.set()
            _marked(call, by_pydantic_ai)
            if not self._context.streaming:  # turned off for the run: pydantic-ai still streams
                return _journaled(call, await answer(_unwritten))
            # The attempt's text goes to the task's stream too, between its attempt and end marks.
            writer = call.context.stream_writer()
            return _journaled(call, await writer.attempt(call.seq, call.attempt, answer))

        async def journaled() -> ModelResponse:
            response: ModelResponse = JSON_CODEC.load(ModelResponse, await self._call(messages, run))
            return response

        # The call runs beside pydantic-ai's reading of it; it takes its seq as it starts, before
        # anything else of the run can (the run waits here until the call answers or goes live).
        with reported_once(by_pydantic_ai):
            call = asyncio.create_task(journaled())
        started = asyncio.create_task(live.wait())
        try:
            await asyncio.wait({call, started}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        finally:
            started.cancel()
        ran(live.is_set())
        if not live.is_set():  # replayed (or failed for good before it ran): never the wrapped model
            yield CompletedStreamedResponse(
                await call, model_request_parameters=model_request_parameters, replay_events=True
            )
            return
        stream.follow(call)
        try:
            yield stream
        except BaseException:
            call.cancel()  # the run stopped reading (an error, a stop): the call is abandoned
            with suppress(asyncio.CancelledError):
                await call
            raise
        await call  # read to the end or not, the answer is journaled before the run goes on

    async def _call(
        self, messages: list[ModelMessage], run: Callable[[Call], Awaitable[JsonValue]]
    ) -> JsonValue:
        """The request as one journaled model call, naming the model it goes to."""
        return await self._context.call_foreign_model(
            self._name, self._shown(messages), run, model=self.wrapped.model_id
        )

    def _shown(self, messages: list[ModelMessage]) -> JsonValue:
        """What the journal shows as the request."""
        shown: JsonValue = {
            "model": self.wrapped.model_name,
            "messages": len(messages),
            "newest": ModelMessagesTypeAdapter.dump_python(messages[-1:], mode="json"),
        }
        return shown


def _marked(call: Call, by_pydantic_ai: bool) -> None:
    """A live attempt: its place in the journal on the span pydantic-ai opened for the request."""
    if by_pydantic_ai:
        mark_span(
            {
                "task.id": call.task_id,
                "op.seq": call.seq,
                "op.kind": str(call.kind),
                "op.name": call.name,
                "op.attempt": call.attempt,
                "op.idempotency_key": call.idempotency_key,
            }
        )


async def _unwritten(piece: str) -> None:
    """A text sink that writes nothing (``ctx.streaming`` is off)."""


def _journaled(call: Call, response: ModelResponse) -> JsonValue:
    """`response` as the journal records it, its usage given to the budget."""
    call.meta["usage"] = _usage(response)
    answer: JsonValue = JSON_CODEC.dump(ModelResponse, response)
    return answer


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
