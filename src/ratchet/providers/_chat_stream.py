"""A chat-completions stream added up: its chunks into the completion `chat_response` reads.

A streamed answer in OpenAI's chat shape arrives as ``chat.completion.chunk``
objects (the OpenAI SDK's, or LiteLLM's look-alikes). Each carries a delta of
the choice: a piece of text, pieces of tool calls keyed by their index (the
id and name in the first piece, the arguments' JSON text split across the
rest); the last carries the finish reason, and, when asked for
(``stream_options.include_usage``), a chunk with no choices carries the
usage. `ChatStream` adds them up and hands each piece of text on as it comes;
`ChatStream.completion` is then a completion of the unstreamed shape, so
`chat_response` makes the same `ModelResponse` of either.

A stream that ends without a finish reason was cut off (a server that died,
a proxy that closed the connection between whole chunks): that is a
retryable failure, never a shorter answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from ._http import stream_cut
from .base import TextSink

__all__ = ["ChatStream"]


@dataclass
class _Call:
    """One tool call being added up."""

    id: str | None = None
    type: str | None = None
    name: str = ""
    arguments: str = ""
    function: bool = False


class ChatStream:
    """The chunks of one streamed chat completion, added up as they come.

    Args:
        on_text: where each piece of the answer's text goes, in order; None
            to hand on nothing (an answer whose content is JSON, not text).
    """

    def __init__(self, on_text: TextSink | None) -> None:
        self._on_text = on_text
        self._texts: list[str] = []
        self._refusals: list[str] = []
        self._calls: list[_Call] = []
        self._finish_reason: str | None = None
        self._usage: Any = None
        self._model: str | None = None
        self._id: str | None = None

    async def add(self, chunk: Any) -> None:
        """Add one chunk; its text, if any, goes to the sink before this returns."""
        model = getattr(chunk, "model", None)
        if isinstance(model, str) and model:
            self._model = model
        chunk_id = getattr(chunk, "id", None)
        if isinstance(chunk_id, str) and chunk_id:
            self._id = chunk_id  # every chunk of a completion carries its id
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._usage = usage
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", None) or 0) != 0:
                continue  # Ratchet asks for one choice; a server that sends more sends the first too
            delta = getattr(choice, "delta", None)
            text = getattr(delta, "content", None)
            if isinstance(text, str) and text:
                self._texts.append(text)
                if self._on_text is not None:
                    await self._on_text(text)
            refusal = getattr(delta, "refusal", None)
            if isinstance(refusal, str) and refusal:
                self._refusals.append(refusal)
            for piece in getattr(delta, "tool_calls", None) or []:
                self._add_call(piece)
            if getattr(choice, "finish_reason", None):
                self._finish_reason = choice.finish_reason

    @property
    def text(self) -> str:
        """The text so far."""
        return "".join(self._texts)

    def completion(self, model: str, where: str) -> SimpleNamespace:
        """The whole answer, shaped as an unstreamed completion (what `chat_response` reads).

        Args:
            model, where: the provider's name and the server, for the message.

        Raises:
            ModelError: the stream ended without a finish reason: it was cut
                off (retryable, no status).
        """
        if self._finish_reason is None:
            raise stream_cut(model, where, f"it ended after {len(self.text)} characters of text")
        calls = [
            SimpleNamespace(
                id=call.id,
                type=call.type or "function",
                function=SimpleNamespace(name=call.name, arguments=call.arguments) if call.function else None,
            )
            for call in self._calls
        ]
        # As unstreamed: no text beside tool calls is null, an empty answer is "".
        content = self.text if self._texts or not calls else None
        message = SimpleNamespace(
            content=content, tool_calls=calls or None, refusal="".join(self._refusals) or None
        )
        choice = SimpleNamespace(message=message, finish_reason=self._finish_reason)
        return SimpleNamespace(choices=[choice], usage=self._usage, model=self._model, id=self._id)

    def _add_call(self, piece: Any) -> None:
        index = getattr(piece, "index", None)
        call_id = getattr(piece, "id", None) or None
        if not isinstance(index, int):
            # Some servers (Gemini's OpenAI layer) send no index: a new id starts a new call.
            starts = not self._calls or (call_id is not None and self._calls[-1].id not in (None, call_id))
            index = len(self._calls) if starts else len(self._calls) - 1
        while len(self._calls) <= index:
            self._calls.append(_Call())
        call = self._calls[index]
        # The id and the name come once, in the first piece; some servers repeat them in every piece.
        if call_id is not None and call.id is None:
            call.id = call_id
        kind = getattr(piece, "type", None)
        if isinstance(kind, str) and kind:
            call.type = kind
        function = getattr(piece, "function", None)
        if function is None:
            return
        call.function = True
        name = getattr(function, "name", None)
        if isinstance(name, str) and name and name != call.name:
            call.name += name
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str):
            call.arguments += arguments
