"""The OpenTelemetry SDK for the in-process span tests: one tracer provider, an in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ratchet.observe import stable_ids


@pytest.fixture(scope="session")
def _exporter() -> InMemorySpanExporter:
    # OpenTelemetry takes one global tracer provider per process: set once, emptied per test.
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=stable_ids())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture
def spans(_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The spans this test's tasks report, in this process."""
    _exporter.clear()
    yield _exporter
    _exporter.clear()
