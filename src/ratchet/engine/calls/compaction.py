"""Compaction: a model request's history shortened to its token budget, by a journaled summary.

`Compaction` is a middleware of model requests: before a request takes its
seq, ``before_model`` may rewrite it. When the request's messages pass the
token budget, the older ones (between the pinned head and the most recent
`keep_recent`) are replaced in the request by one summary message. The
summary is a model call of purpose ``summarize``, journaled like any other,
so a resumed task replays it and sends the very same requests.

Only the request is shortened: the caller's history and everything stored
(messages, the journal) stay whole.

A summary is remembered for the run (the context keeps one memory per
layer): a later request whose history begins with the same summarized
messages reuses it, and when the history grows past the budget again, only
the messages after it are summarized, together with it. So the same prefix
is never summarized twice, and since the memory is rebuilt by replay in
program order, the requests a resumed run sends are the ones the first run
sent.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import JsonValue

from ...errors import InputError
from ...trust.code import FILE_MODULE_PREFIX, portable_path
from ..workflow import load_module

if TYPE_CHECKING:
    from ...providers import ModelRequest, ModelResponse

__all__ = [
    "DEFAULT_COMPACTION",
    "SUMMARIZE",
    "Compaction",
    "ModelHost",
    "RequestMiddleware",
    "compaction_reference",
    "load_compaction",
    "tokens",
]

DEFAULT_COMPACTION = "default"
"""How a task records the built-in `Compaction` with its own settings (None: no compaction)."""

SUMMARIZE = """Summarize the conversation below for the assistant that continues it: what was
asked, what was done, what was found, what is left. Be brief and keep every fact still needed."""

SUMMARY_PREFIX = "Summary of the earlier messages of this conversation: "


class ModelHost(Protocol):
    """What a request middleware may use of the context its request is made in."""

    async def send_model_request(self, request: ModelRequest) -> ModelResponse:
        """Ask the model, journaled, without the request middleware (a summary is not compacted)."""
        ...

    async def emit(
        self, message: str, *, kind: str = ..., severity: Any = ..., data: dict[str, JsonValue] | None = ...
    ) -> None:
        """Record a progress event, once."""
        ...

    def memory(self, layer: object) -> dict[str, Any]:
        """The run's own memory for `layer`: empty at the start of every run, rebuilt by replay."""
        ...


class RequestMiddleware(Protocol):
    """A middleware that rewrites model requests before they are journaled and sent."""

    async def before_model(self, request: ModelRequest, host: ModelHost) -> ModelRequest: ...


def tokens(messages: Iterable[dict[str, Any]]) -> int:
    """A rough token count: a token for every four characters of the messages as JSON."""
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) // 4


@dataclass(frozen=True)
class _Summary:
    count: int  # how many messages after the head it covers
    digest: str  # of the head and those messages
    text: str


def _digest(messages: Sequence[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class Compaction:
    """Summarize a request's older messages when the request passes `token_budget`.

    The agent and the chat use one by default; a workflow adds one to its
    middleware (``@ratchet.workflow(middleware=[Compaction()])``). Subclass
    it, or write any object with ``async before_model(request, host)``, to
    compact another way.

    Args:
        token_budget: the most tokens (about four characters each) a
            request's messages may have before older ones are summarized.
        keep_recent: how many of the newest messages are always sent as they are.
    """

    def __init__(self, *, token_budget: int = 6000, keep_recent: int = 6) -> None:
        if token_budget < 200:
            raise InputError(f"token_budget {token_budget}: give at least 200 tokens")
        if keep_recent < 2:
            raise InputError(f"keep_recent {keep_recent}: keep at least the 2 newest messages")
        self.token_budget = token_budget
        self.keep_recent = keep_recent

    def __repr__(self) -> str:
        return f"Compaction(token_budget={self.token_budget}, keep_recent={self.keep_recent})"

    @staticmethod
    def pinned(messages: Sequence[dict[str, Any]]) -> int:
        """How many leading messages are always sent: the system messages and the first user message."""
        head = 0
        while head < len(messages) and messages[head].get("role") == "system":
            head += 1
        if head < len(messages) and messages[head].get("role") == "user":
            head += 1
        return head

    async def before_model(self, request: ModelRequest, host: ModelHost) -> ModelRequest:
        """The request to send: as it is, or with its older messages replaced by a summary."""
        messages = request.messages
        if tokens(messages) <= self.token_budget:
            return request
        head = self.pinned(messages)
        cut = len(messages) - self.keep_recent
        while cut > head and messages[cut].get("role") == "tool":
            cut -= 1  # never part a tool's result from the call that asked for it
        if cut <= head:
            return request
        memory = host.memory(self)
        known: list[_Summary] = memory.setdefault(_digest(messages[:head]), [])
        best = self._best(known, messages, head, cut)
        if best is not None:
            shorter = self._with(messages, head, best)
            if best.count == cut - head or tokens(shorter) <= self.token_budget:
                return request.model_copy(update={"messages": shorter})
        summary = await self._summarize(host, messages, head, cut, best)
        known.append(summary)
        return request.model_copy(update={"messages": self._with(messages, head, summary)})

    @staticmethod
    def _best(
        known: list[_Summary], messages: Sequence[dict[str, Any]], head: int, cut: int
    ) -> _Summary | None:
        """The summary covering the most of ``messages[head:cut]``'s beginning, if any does."""
        for summary in sorted(known, key=lambda s: -s.count):
            if summary.count <= cut - head and _digest(messages[: head + summary.count]) == summary.digest:
                return summary
        return None

    @staticmethod
    def _with(messages: Sequence[dict[str, Any]], head: int, summary: _Summary) -> list[dict[str, Any]]:
        said = {"role": "user", "content": SUMMARY_PREFIX + summary.text}
        return [*messages[:head], said, *messages[head + summary.count :]]

    async def _summarize(
        self,
        host: ModelHost,
        messages: Sequence[dict[str, Any]],
        head: int,
        cut: int,
        earlier: _Summary | None,
    ) -> _Summary:
        start = head + (earlier.count if earlier is not None else 0)
        older = list(messages[start:cut])
        asked: list[dict[str, JsonValue]] = [{"role": "system", "content": SUMMARIZE}]
        if earlier is not None:
            asked.append({"role": "user", "content": f"The summary so far: {earlier.text}"})
        asked.append({"role": "user", "content": json.dumps(older, ensure_ascii=False)})
        from ...providers import ModelRequest

        request = ModelRequest.model_validate({"purpose": "summarize", "messages": asked})
        answer = await host.send_model_request(request)
        text = answer.content if isinstance(answer.content, str) else json.dumps(answer.content)
        await host.emit(
            f"summarized {len(older)} earlier messages of the history"
            + (" with the summary before them" if earlier is not None else ""),
            kind="compacted",
            data={"messages": len(older), "covered": cut - head},
        )
        return _Summary(count=cut - head, digest=_digest(messages[:cut]), text=text)


def compaction_reference(compaction: object) -> JsonValue:
    """How a task records `compaction`: None, the built-in one by its settings
    (``{"token_budget": N, "keep_recent": K}``), or ``module:name`` / ``file.py:name``.

    A custom compaction must be a top-level name of a module or a project
    file, so that any worker can load it again (with the code trust the run
    enforces), as with tools.

    Raises:
        InputError: the object is not a top-level name of an importable module.
    """
    if compaction is None:
        return None
    if type(compaction) is Compaction:
        return {"token_budget": compaction.token_budget, "keep_recent": compaction.keep_recent}
    module = sys.modules.get(type(compaction).__module__)
    names = [name for name, value in vars(module).items() if value is compaction] if module else []
    if module is None or not names:
        raise InputError(
            f"compaction {compaction!r} is not defined at the top level of a module; "
            "a worker could not load it again"
        )
    path = getattr(module, "__file__", None)
    if (module.__name__ == "__main__" or module.__name__.startswith(FILE_MODULE_PREFIX)) and path:
        return f"{portable_path(path)}:{names[0]}"
    return f"{module.__name__}:{names[0]}"


def load_compaction(reference: JsonValue, *, token_budget: int, keep_recent: int) -> list[Any]:
    """The request middleware a task's recorded compaction names (an empty list for None).

    ``"default"`` is the built-in one with `token_budget` and `keep_recent`
    (the host's settings); a JSON object, the built-in one with its own.

    Raises:
        CodeRefused: the code trust the run enforces does not admit its module.
        WorkflowNotFound: its module does not load.
        InputError: the name is not in its module, or has no ``before_model``.
    """
    if reference is None:
        return []
    if reference == DEFAULT_COMPACTION:
        return [Compaction(token_budget=token_budget, keep_recent=keep_recent)]
    if isinstance(reference, dict):
        settings = {key: reference.get(key) for key in ("token_budget", "keep_recent")}
        if not all(isinstance(value, int) for value in settings.values()):
            raise InputError(f"compaction {reference!r}: give token_budget and keep_recent as whole numbers")
        return [
            Compaction(
                token_budget=int(str(settings["token_budget"])), keep_recent=int(str(settings["keep_recent"]))
            )
        ]
    if not isinstance(reference, str) or ":" not in reference:
        raise InputError(f"compaction {reference!r} is not 'default', settings, or 'module:name'")
    source, _, name = reference.rpartition(":")
    found = getattr(load_module(source), name, None)
    if not callable(getattr(found, "before_model", None)):
        raise InputError(f"compaction {reference!r} is not an object with a before_model method")
    return [found]
