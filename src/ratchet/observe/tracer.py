"""Ratchet's tracer, and how its spans keep their derived ids whoever installed the tracer provider.

Each span Ratchet reports is started with an explicit parent context that
carries its task's trace id (`ratchet.observe.spans`), so every span of a
task is in the task's trace under any provider. For the parents to resolve
(a call's span under its step's, the step's under the task's), each span
must also take the span id its children already name: Ratchet reports a span
when what it reports is over, children first, so those ids are derived
(`ratchet.observe.ids`), and only the SDK's id generator can hand them out.

A provider built with `ratchet.observe.stable_ids` hands them out. The SDK's
own ``TracerProvider()`` without it (what ``logfire.configure()`` or a user's
code installs) does not: the tracer Ratchet takes from such a provider gets
an id generator of its own that hands out Ratchet's ids and the provider's
otherwise (`ratchet.observe.setup.chosen_ids`). Only that tracer changes;
the provider and every other tracer keep theirs. A provider whose tracers
are not the SDK's (a wrapper that hides the SDK tracer it uses) keeps random
span ids: the spans are still in one trace, but their parents are the
derived ids no span carries (docs/observability.md, "A tracer provider of
your own").
"""

from __future__ import annotations

from typing import Any

from .setup import chooses_ids, chosen_ids

__all__ = ["ratchet_tracer"]

# The provider the tracer came from, and the tracer: asked for once per provider.
_taken: tuple[object, Any, bool] | None = None


def ratchet_tracer() -> tuple[Any, bool]:
    """The tracer Ratchet's spans are started with, and whether they take the ids Ratchet chooses."""
    global _taken
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if _taken is not None and _taken[0] is provider:
        return _taken[1], _taken[2]
    tracer: Any = provider.get_tracer("ratchet")
    generator = getattr(tracer, "id_generator", None)
    if generator is not None and not chooses_ids(generator):
        tracer.id_generator = chosen_ids(generator)
    chooses = chooses_ids(getattr(tracer, "id_generator", None))
    _taken = (provider, tracer, chooses)
    return tracer, chooses
