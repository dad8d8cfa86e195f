"""Observability: OpenTelemetry spans and metrics, and Prometheus metrics (docs/observability.md).

Both are optional extras: ``ratchet[otel]`` (the OpenTelemetry API) and
``ratchet[metrics]`` (prometheus-client). Nothing here imports either until
it is used; OpenTelemetry's spans and metrics are reported only once the
program set a tracer or meter provider.
"""

from __future__ import annotations

from .ids import span_id_for, trace_id_for
from .recording import recording
from .setup import configure_tracing, stable_ids

__all__ = ["configure_tracing", "recording", "span_id_for", "stable_ids", "trace_id_for"]
