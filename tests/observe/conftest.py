"""The OpenTelemetry SDK for the in-process tests: one tracer provider with an in-memory exporter, one
meter provider with an in-memory reader."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import metrics as otel_metrics
from opentelemetry import trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider, UpDownCounter
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
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


@pytest.fixture(scope="session")
def _meter_reader() -> InMemoryMetricReader:
    # One global meter provider per process too: set once; delta temporality, so each read
    # holds what was recorded since the one before.
    delta = AggregationTemporality.DELTA
    reader = InMemoryMetricReader(
        preferred_temporality={Counter: delta, Histogram: delta, UpDownCounter: delta}
    )
    otel_metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return reader


@pytest.fixture
def meter_reader(_meter_reader: InMemoryMetricReader) -> InMemoryMetricReader:
    """The OpenTelemetry metrics this test's tasks report, in this process (read it once, at its end)."""
    _meter_reader.get_metrics_data()  # what tests before this one recorded
    return _meter_reader
