"""The engine's reports as OpenTelemetry metrics, when the program set a meter provider.

Ratchet uses the OpenTelemetry metrics API only, as it does for spans: a
process that never imported the API, or set no meter provider, reports
nothing and pays one lookup. Once a provider is set (by the program, or
``opentelemetry-instrument``), `otel_recorder` gives the recorder that
reports to it; `ratchet.observe.recording.current_recorder` sends every
report there too. Model calls follow the GenAI semantic conventions
(``gen_ai.client.operation.duration``, ``gen_ai.client.token.usage``); the
rest are Ratchet's own, named like its span attributes.
"""

from __future__ import annotations

import sys
from typing import Any

from .measured import CALL_BUCKETS, TASK_BUCKETS, MeasuredCall

__all__ = ["DURATION_BUCKETS", "TOKEN_BUCKETS", "OtelRecorder", "metering_on", "otel_recorder"]

# The boundaries the GenAI conventions advise for their two histograms; Ratchet's own take its
# Prometheus histograms' (`ratchet.observe.measured`).
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)

_made: tuple[object, OtelRecorder] | None = None  # the provider the recorder was made for, and it


def _provider() -> Any:
    """The meter provider the program set, or None (the API not imported, or no provider set)."""
    api = sys.modules.get("opentelemetry.metrics")
    if api is None:
        return None
    provider = api.get_meter_provider()
    if isinstance(provider, api.NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider":
        return None
    return provider


def metering_on() -> bool:
    """Whether OpenTelemetry metrics go anywhere: the API is loaded and a meter provider was set."""
    return _provider() is not None


def otel_recorder() -> OtelRecorder | None:
    """The recorder reporting to the meter provider the program set; None when none is set."""
    global _made
    provider = _provider()
    if provider is None:
        return None
    if _made is None or _made[0] is not provider:  # its instruments are made once per provider
        _made = (provider, OtelRecorder(provider))
    return _made[1]


class OtelRecorder:
    """A `ratchet.observe.recording.Recorder` over a meter provider's instruments."""

    def __init__(self, provider: Any) -> None:
        meter = provider.get_meter("ratchet")
        self.operation = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self.calls = meter.create_counter(
            "ratchet.calls", unit="{call}", description="Live calls that ended."
        )
        self.call_duration = meter.create_histogram(
            "ratchet.call.duration",
            unit="s",
            description="Live calls, from their start in this process to their outcome committed.",
            explicit_bucket_boundaries_advisory=CALL_BUCKETS,
        )
        self.tool_duration = meter.create_histogram(
            "ratchet.tool_call.duration",
            unit="s",
            description="Live tool calls, by tool.",
            explicit_bucket_boundaries_advisory=CALL_BUCKETS,
        )
        self.cost = meter.create_counter(
            "ratchet.model.cost", unit="{USD}", description="US dollars the priced model calls cost."
        )
        self.retries = meter.create_counter(
            "ratchet.call.retries", unit="{attempt}", description="Failed call attempts tried again."
        )
        self.in_doubt_calls = meter.create_counter(
            "ratchet.calls.in_doubt", unit="{call}", description="Tool calls found in flight on resume."
        )
        self.takeovers = meter.create_counter(
            "ratchet.lease.takeovers", unit="{run}", description="Runs that picked up a task left running."
        )
        self.commits = meter.create_histogram(
            "ratchet.journal.commit.duration", unit="s", description="Time to commit a journal write."
        )
        self.task_duration = meter.create_histogram(
            "ratchet.task.duration",
            unit="s",
            description="Tasks that ended, from their first start to their end.",
            explicit_bucket_boundaries_advisory=TASK_BUCKETS,
        )
        self.slots_in_use = meter.create_up_down_counter(
            "ratchet.worker.slots.in_use", unit="{slot}", description="Worker slots running a task."
        )
        self.slots_free = meter.create_up_down_counter(
            "ratchet.worker.slots.free", unit="{slot}", description="Worker slots free to take a task."
        )

    def call_ended(self, kind: str, outcome: str) -> None:
        self.calls.add(1, {"ratchet.op.kind": kind, "ratchet.op.outcome": outcome})

    def call_measured(self, call: MeasuredCall) -> None:
        self.call_duration.record(
            call.seconds, {"ratchet.op.kind": call.kind, "ratchet.op.outcome": call.outcome}
        )
        if call.tool is not None:
            self.tool_duration.record(
                call.seconds,
                {
                    "gen_ai.tool.name": call.tool,
                    "ratchet.op.outcome": call.outcome,
                    "ratchet.task.agent": call.agent,
                },
            )
        if call.model is None:
            return
        prefix, _, name = call.model.partition(":")
        provider = call.protocol or prefix  # the conventions' provider: the protocol, not an endpoint's name
        model = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.system": provider,
            "gen_ai.request.model": name,
            "ratchet.task.agent": call.agent,
        }
        ended = {**model, "ratchet.op.outcome": call.outcome}
        if call.error_type is not None:
            ended["error.type"] = call.error_type
        self.operation.record(call.seconds, ended)
        if call.input_tokens or call.output_tokens:
            self.tokens.record(call.input_tokens, {**model, "gen_ai.token.type": "input"})
            self.tokens.record(call.output_tokens, {**model, "gen_ai.token.type": "output"})
        if call.cost:
            self.cost.add(call.cost, model)

    def retried(self, kind: str, count: int) -> None:
        self.retries.add(count, {"ratchet.op.kind": kind})

    def in_doubt(self) -> None:
        self.in_doubt_calls.add(1)

    def took_over(self) -> None:
        self.takeovers.add(1)

    def committed(self, seconds: float) -> None:
        self.commits.record(seconds)

    def task_ended(self, agent: str, outcome: str, seconds: float) -> None:
        self.task_duration.record(seconds, {"ratchet.task.agent": agent, "ratchet.task.status": outcome})

    def slots_changed(self, in_use: int, free: int) -> None:
        if in_use:
            self.slots_in_use.add(in_use)
        if free:
            self.slots_free.add(free)
