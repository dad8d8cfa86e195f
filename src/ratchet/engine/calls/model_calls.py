"""A workflow's model calls: journaled requests, and answers held to a pydantic model.

``ctx.call_model(request)`` sends one request through the middleware chain
(journaled; replayed on resume) and returns the `ModelResponse`.
``ctx.call_model(request, schema=Model)`` asks for a JSON answer that fits
``Model`` (the provider constrains the answer where it can, see
docs/providers.md), validates it, and when it does not fit tells the model
what is wrong and asks again, at most ``max_repairs`` times. Each repair is
one more journaled model call, so a resumed task replays the same answers and
gets the same instance back. After the last repair, `InvalidModelOutput`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, JsonValue, ValidationError

from ...errors import InputError, InvalidModelOutput, OperationFailed
from ...policy import RetryPolicy
from ...records import OpKind, Severity
from ...validation import problems
from .call import Call, CallContext, step_meta

if TYPE_CHECKING:  # the providers are imported when a task first calls its model
    from ...providers import ModelProvider, ModelRequest, ModelResponse

__all__ = ["DEFAULT_MAX_REPAIRS", "ModelCalls"]

M = TypeVar("M", bound=BaseModel)

DEFAULT_MAX_REPAIRS = 2

REPAIR = (
    "Your answer could not be used: {problem}\n"
    "Answer again with one JSON object that fits the schema asked for, and nothing else."
)


class ModelCalls:
    """The model side of a workflow's context: its provider, its requests, its structured answers.

    Args:
        context: the context the calls run in (what the middleware sees).
        chain: the composed middleware chain.
        request_layers: middleware with ``before_model(request, context)``
            (compaction), which may rewrite a request before it is sent.
        retry: the workflow's retry policy for model calls.
        model: the task's ``provider:name`` string, resolved on the first call.
        take_seq: gives the next journal seq.
        before_call: awaited before every model call after the first (a checkpoint, per policy).
        emit: records a progress event once (``Context.emit``).
    """

    def __init__(
        self,
        *,
        context: CallContext,
        chain: Callable[[Call], Awaitable[JsonValue]],
        request_layers: Sequence[Any] = (),
        retry: RetryPolicy,
        model: str | None,
        take_seq: Callable[[], int],
        before_call: Callable[[], Awaitable[object]],
        emit: Callable[..., Awaitable[None]],
    ) -> None:
        self._context = context
        self._chain = chain
        self._request_layers = list(request_layers)
        self._retry = retry
        self._model_name = model
        self._take_seq = take_seq
        self._before_call = before_call
        self._emit = emit
        self._provider: ModelProvider | None = None
        # The other models the workflow named (``model=``), built once each, by model string.
        self._others: dict[str, ModelProvider] = {}
        # Requests made per model and purpose, retries included: the scripted model's ordinals
        # (None is the task's model), so each scripted model of a workflow follows its own script.
        self._attempts: dict[tuple[str | None, str], int] = defaultdict(int)
        self._calls = 0

    @property
    def provider(self) -> ModelProvider:
        """The task's model, built on first use."""
        if self._provider is None:
            if not self._model_name:
                raise InputError(f"task {self._context.task.id} has no model; give one with --model")
            from ...providers import resolve_model

            self._provider = resolve_model(self._model_name)
        return self._provider

    def provider_for(self, model: str | None) -> ModelProvider:
        """The provider of `model` (``provider:name``), built on its first use; None: the task's.

        Raises:
            InputError: `model` names no usable model.
        """
        if model is None or model == self._model_name:
            return self.provider
        found = self._others.get(model)
        if found is None:
            from ...providers import resolve_model

            found = self._others[model] = resolve_model(model)
        return found

    async def call(self, request: Any, model: str | None = None, stream: bool = True) -> ModelResponse:
        """One model request, after the request middleware (compaction) had its say."""
        from ...providers import ModelRequest

        request = ModelRequest.model_validate(request)
        for layer in self._request_layers:
            request = await layer.before_model(request, self._context)
        return await self.send(request, model, stream)

    async def send(self, request: Any, model: str | None = None, stream: bool = True) -> ModelResponse:
        """One journaled model request as it is; returns the `ModelResponse` (replayed on resume).

        With `model`, the request goes to that model; the operation's input
        names it (``input["model"]``). A replay takes the recorded answer
        and never builds, nor calls, a provider. With `stream`, a provider
        that streams sends its answer's pieces to the task's stream as they
        come (engine/streams.py); the journal records the whole answer.
        """
        from ...providers import ModelRequest, ModelResponse

        request = ModelRequest.model_validate(request)
        if model == self._model_name:
            model = None  # the task's own model: recorded as any call to it
        if model is not None and (not isinstance(model, str) or ":" not in model):
            raise InputError(f"model {model!r}: give provider:name, e.g. openai:gpt-4o-mini")
        if self._calls:
            await self._before_call()
        self._calls += 1
        purpose = str(request.purpose)
        recorded = request.model_dump(mode="json")
        if model is not None:
            recorded["model"] = model
        counter = (model, purpose)
        call = Call(
            context=self._context,
            kind=OpKind.MODEL,
            name=f"model:{purpose}",
            seq=self._take_seq(),
            input=recorded,
            retry=self._retry,
            request=request,
            model=model,
            ordinal_base=self._attempts[counter],
            stream=stream,
            meta=step_meta(self._context.current_step),
        )
        try:
            output = await self._chain(call)
        finally:  # the entries its attempts took, however it ended (failed, or cut by a step's timeout)
            self._attempts[counter] = call.ordinal_base + call.attempt
        return ModelResponse.model_validate(output)

    async def call_for(
        self, request: Any, schema: type[M], max_repairs: int, model: str | None = None, stream: bool = True
    ) -> M:
        """Ask for an answer that fits `schema`; repair it up to `max_repairs` times.

        Raises:
            InvalidModelOutput: no answer fitted, after the repairs.
            OperationFailed: the model call itself failed for good (other
                than by answering malformed JSON, which is repaired).
        """
        from ...providers import ModelRequest, OutputSchema

        if max_repairs < 0:
            raise InputError(f"max_repairs must be 0 or more, not {max_repairs}")
        asked: ModelRequest = ModelRequest.model_validate(request)
        asked = asked.model_copy(update={"output_schema": OutputSchema.of(schema), "json_output": True})
        messages = list(asked.messages)
        problem = ""
        for attempt in range(max_repairs + 1):
            said: list[dict[str, JsonValue]] = []
            try:
                answer = await self.call(asked.model_copy(update={"messages": messages}), model, stream)
            except OperationFailed as failed:
                if failed.error_type != "MalformedAnswer":
                    raise
                problem = failed.error
            else:
                try:
                    return _validated(schema, answer.content)
                except (ValidationError, ValueError) as error:
                    problem = _describe(error)
                    said = [{"role": "assistant", "content": _as_text(answer.content)}]
            if attempt < max_repairs:
                await self._emit(
                    f"the model's answer did not fit {schema.__name__} ({problem}); asking again",
                    kind="model_output_invalid",
                    severity=Severity.WARNING,
                    data={"schema": schema.__name__, "repair": attempt + 1, "problem": problem},
                )
            messages = [*messages, *said, {"role": "user", "content": REPAIR.format(problem=problem)}]
        raise InvalidModelOutput(
            f"the model's answer did not fit {schema.__name__} after {max_repairs} "
            f"repair{'s' if max_repairs != 1 else ''}: {problem}"
        )


def _validated(schema: type[M], content: JsonValue) -> M:
    if isinstance(content, str):
        text = content.strip()
        if text.startswith("```"):  # a code fence around the JSON
            text = text.strip("`").removeprefix("json").strip()
        return schema.model_validate_json(text)
    if content is None:
        raise ValueError("the answer was empty")
    return schema.model_validate(content)


def _describe(error: BaseException) -> str:
    """The problems of a validation error in one line the model can act on."""
    if isinstance(error, ValidationError):
        return problems(error, whole="the answer", limit=5)
    return " ".join(str(error).split())[:300] or type(error).__name__


def _as_text(content: JsonValue) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)
