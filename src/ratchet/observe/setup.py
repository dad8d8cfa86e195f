"""Turning tracing on from the standard ``OTEL_*`` environment variables.

Ratchet never requires OpenTelemetry. With only ``opentelemetry-api``
installed and nothing configured, its tracer is the API's no-op one and a
call costs a check. `configure_tracing` installs the SDK's tracer provider
when the environment asks for an exporter (``OTEL_TRACES_EXPORTER``, e.g.
``otlp`` or ``console``), unless ``OTEL_SDK_DISABLED=true`` or the program
already installed a provider of its own (``opentelemetry-instrument``, the
user's code): that one is used as it is. Its ``console`` exporter writes to
stderr, never to stdout, which is the command's own output.
"""

from __future__ import annotations

import functools
import os
import sys
from importlib.metadata import entry_points
from typing import Any

from ..errors import InputError
from .ids import next_span_id, next_trace_id

__all__ = ["chooses_ids", "chosen_ids", "configure_tracing", "stable_ids"]


def stable_ids() -> Any:
    """An SDK ``IdGenerator`` that gives each span Ratchet starts its derived, stable id.

    Pass it to your own ``TracerProvider(id_generator=...)`` to keep span
    ids stable across resumes; other spans get random ids as usual. (Without
    it Ratchet's spans keep their ids anyway: `ratchet.observe.tracer`.)
    """
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    return chosen_ids(RandomIdGenerator())


def chosen_ids(fallback: Any) -> Any:
    """An SDK ``IdGenerator``: the id `ratchet.observe.ids.stable_span_id` chose, else `fallback`'s."""
    return _chosen_class()(fallback)


def chooses_ids(generator: object) -> bool:
    """Whether `generator` hands out the ids Ratchet chooses (made by `chosen_ids` or `stable_ids`)."""
    return getattr(generator, "_ratchet_chooses_ids", False) is True


@functools.cache
def _chosen_class() -> type:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class ChosenIds(IdGenerator):
        _ratchet_chooses_ids = True

        def __init__(self, fallback: IdGenerator) -> None:
            self.fallback = fallback

        def generate_span_id(self) -> int:
            chosen = next_span_id()
            return chosen if chosen is not None else self.fallback.generate_span_id()

        def generate_trace_id(self) -> int:
            chosen = next_trace_id()
            return chosen if chosen is not None else self.fallback.generate_trace_id()

        def is_trace_id_random(self) -> bool:
            # A derived trace id is not random; the fallback's are (the SDK asks, for W3C's random flag).
            return next_trace_id() is None and self.fallback.is_trace_id_random()

    return ChosenIds


def configure_tracing(environ: dict[str, str] | None = None) -> bool:
    """Install the SDK's tracer provider as the ``OTEL_*`` variables ask; return whether it did.

    Does nothing when tracing is not asked for, the SDK is not installed, or
    a provider is set already.

    Raises:
        InputError: ``OTEL_TRACES_EXPORTER`` names an exporter that is not installed.
    """
    env = os.environ if environ is None else environ
    names = [n.strip() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or not names or names == ["none"]:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        return False  # the API alone: no-op spans, as the user installed it
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return False
    resource = Resource.create()  # OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": "ratchet"}))
    provider = TracerProvider(id_generator=stable_ids(), resource=resource)
    for name in names:
        if name == "none":
            continue
        found = entry_points(group="opentelemetry_traces_exporter", name=name)
        if not found:
            raise InputError(
                f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed "
                "(e.g. pip install opentelemetry-exporter-otlp for otlp)"
            )
        exporter_class = next(iter(found)).load()
        # The console exporter writes to stdout by default, where a command's output goes (``run
        # --json``'s last line, ``mcp``'s protocol): Ratchet's goes to stderr, as its logs do.
        exporter = exporter_class(out=sys.stderr) if name == "console" else exporter_class()
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return True
