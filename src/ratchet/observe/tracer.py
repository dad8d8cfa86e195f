"""Ratchet's tracer, and how its spans keep their derived ids whoever installed the tracer provider.

Each span Ratchet reports is started with an explicit parent context that
carries its task's trace id (`ratchet.observe.spans`), so every span of a
task is in the task's trace under any provider. For the parents to resolve
(a call's span under its step's, the step's under the task's), each span
must also take the span id its children already name: Ratchet reports a span
when what it reports is over, children first, so those ids are derived
(`ratchet.observe.ids`), and only the SDK's id generator can hand them out.

A provider built with `ratchet.observe.stable_ids` hands them out. The SDK's
own ``TracerProvider()`` without it (what a user's own setup installs) does
not: the tracer Ratchet takes from such a provider gets an id generator of
its own that hands out Ratchet's ids and the provider's otherwise
(`ratchet.observe.setup.chosen_ids`). So does the SDK tracer a wrapper keeps
as its ``tracer`` (Logfire's tracers wrap one so, and may swap it when
reconfigured: it is looked at before each span). Only that tracer changes;
the provider and every other tracer keep theirs. A provider whose tracers
hide the tracer they use keeps random span ids: the spans are still in one
trace, but their parents are the derived ids no span carries
(docs/observability.md, "A tracer provider of your own").
"""

from __future__ import annotations

from typing import Any

from .setup import chooses_ids, chosen_ids

__all__ = ["ratchet_tracer"]

# The provider the tracer came from, and the tracer: asked for once per provider.
_taken: tuple[object, Any] | None = None


def ratchet_tracer() -> tuple[Any, bool]:
    """The tracer Ratchet's spans are started with, and whether they take the ids Ratchet chooses."""
    global _taken
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if _taken is None or _taken[0] is not provider:
        _taken = (provider, provider.get_tracer("ratchet"))
    tracer = _taken[1]
    # The SDK's tracer keeps its generator as ``id_generator``; a wrapper keeps the SDK's as ``tracer``.
    holders: tuple[Any, ...] = (tracer, getattr(tracer, "tracer", None))
    for holder in holders:
        generator = getattr(holder, "id_generator", None)
        if generator is not None:
            if not chooses_ids(generator):
                holder.id_generator = chosen_ids(generator)
            return tracer, True
    return tracer, False
