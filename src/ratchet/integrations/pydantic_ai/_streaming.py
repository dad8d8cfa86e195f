"""`JournaledStream`: what pydantic-ai reads a live streamed request of a `RatchetModel` from.

A streamed request is still one journaled model call (``ctx.call_foreign_model``).
The call runs in an asyncio task of its own: it streams from the wrapped model,
hands each event here as it comes, and journals the whole answer once when the
wrapped stream ends. pydantic-ai reads the events from here, in order, in its
own task; once the call is journaled, `get` is the journaled answer, so the run
goes on from exactly what a replay reads back.

An attempt cut off midway is retried as any model call is; pydantic-ai cannot
take back text it was given, so the retry's events follow the cut attempt's
here (the task's stream, whose marks separate attempts, is where a reader tells
them apart). The run's output is the journaled answer's either way.

Cancelling the response (``StreamedRunResult.cancel``) is refused, with
pydantic-ai's own error (`close_stream` is not implemented): a cancelled
answer is partial, and a replay, which reads back whole answers, could not
give the run the same one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime

from pydantic_ai.messages import (
    FinalResultEvent,
    ModelResponse,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.usage import RequestUsage

from ...records import utcnow

__all__ = ["JournaledStream", "text_of"]


def text_of(event: ModelResponseStreamEvent) -> str:
    """The answer text `event` adds: a text part's first content, or a text delta ('' for any other event)."""
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return event.part.content
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return event.delta.content_delta
    return ""


class JournaledStream(StreamedResponse):
    """The events of a journaled call's live attempts, then its journaled answer.

    Args:
        model_request_parameters: the request's, as pydantic-ai gave them.
        model: the wrapped model, which names the answer until it is journaled.
    """

    def __init__(self, model_request_parameters: ModelRequestParameters, *, model: Model) -> None:
        super().__init__(model_request_parameters)
        self._model = model
        self._started = utcnow()
        # Events as the call hands them over; None once the call has ended (answered or failed).
        self._events: asyncio.Queue[ModelResponseStreamEvent | None] = asyncio.Queue()
        self._call: asyncio.Future[ModelResponse] | None = None
        self._answer: ModelResponse | None = None

    def forward(self, event: ModelResponseStreamEvent) -> None:
        """Hand pydantic-ai one event of the live attempt (from the call's task)."""
        self._events.put_nowait(event)

    def follow(self, call: asyncio.Future[ModelResponse]) -> None:
        """Read events until `call`, whose answer is the journaled one, ends."""
        self._call = call
        call.add_done_callback(lambda _: self._events.put_nowait(None))

    def __aiter__(self) -> AsyncIterator[ModelResponseStreamEvent]:
        # The events are the wrapped stream's own, already with their part-end and final-result
        # events: given as they are, as pydantic-ai's CompletedStreamedResponse gives replayed ones.
        if self._event_iterator is None:
            self._event_iterator = self._read()
        return self._event_iterator

    async def _read(self) -> AsyncIterator[ModelResponseStreamEvent]:
        assert self._call is not None, "follow() the call before reading its events"
        while (event := await self._events.get()) is not None:
            self._parts_manager.apply_event(event)
            if isinstance(event, FinalResultEvent):
                self.final_result_event = event
            yield event
        self._answer = await self._call  # raises what the call raised (OperationFailed, a stop)
        self._finished = True

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:  # pragma: no cover
        raise NotImplementedError("events are read through __aiter__")
        yield

    def get(self) -> ModelResponse:
        """The journaled answer once the call has ended; until then, the parts so far."""
        return self._answer if self._answer is not None else super().get()

    @property
    def usage(self) -> RequestUsage:
        return self._answer.usage if self._answer is not None else super().usage

    @property
    def model_name(self) -> str:
        return (self._answer.model_name if self._answer is not None else None) or self._model.model_name

    @property
    def provider_name(self) -> str | None:
        return self._answer.provider_name if self._answer is not None else self._model.system

    @property
    def provider_url(self) -> str | None:
        return self._answer.provider_url if self._answer is not None else self._model.base_url

    @property
    def timestamp(self) -> datetime:
        return self._answer.timestamp if self._answer is not None else self._started
