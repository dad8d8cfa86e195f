"""The same reports as OpenTelemetry metrics, the GenAI ones to the conventions, once a meter provider is set.

The tests' meter provider has an in-memory reader (conftest.py); a process
that set none reports nothing and imports nothing of OpenTelemetry's metrics.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint

from ratchet import Runtime, TaskStatus
from ratchet.observe.measured import CALL_BUCKETS, TASK_BUCKETS
from ratchet.observe.otel_metrics import DURATION_BUCKETS, TOKEN_BUCKETS
from ratchet.store import StateStore

from ..helpers.cli import ratchet_env
from .metrics_flows import flow, priced

Point = HistogramDataPoint | NumberDataPoint


def read(reader: InMemoryMetricReader) -> dict[str, tuple[str, list[Any]]]:
    """Each metric recorded since the last read: its unit and its data points."""
    found: dict[str, tuple[str, list[Any]]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = (metric.unit or "", list(metric.data.data_points))
    return found


def point(points: list[Any], **attributes: str) -> Any:
    [found] = [p for p in points if dict(p.attributes) == attributes]
    return found


async def test_model_calls_report_the_genai_metrics_and_the_rest_ratchet_s_own(
    store: StateStore, script: Callable[[dict[str, Any]], str], meter_reader: InMemoryMetricReader
) -> None:
    model = script(priced(0.25, 2))
    task = await Runtime(store).run(flow("asks_then_shouts"), {"times": 2}, model=model)
    assert task.status is TaskStatus.COMPLETED, task.error
    got = read(meter_reader)

    name = model.removeprefix("scripted:")
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.system": "scripted",
        "gen_ai.request.model": name,
        "ratchet.task.agent": "asks_then_shouts",
    }
    unit, points = got["gen_ai.client.operation.duration"]
    duration = point(points, **chat, **{"ratchet.op.outcome": "succeeded"})
    assert unit == "s" and duration.count == 2 and duration.sum > 0
    assert tuple(duration.explicit_bounds) == DURATION_BUCKETS
    unit, points = got["gen_ai.client.token.usage"]
    given = point(points, **chat, **{"gen_ai.token.type": "input"})
    answered = point(points, **chat, **{"gen_ai.token.type": "output"})
    assert unit == "{token}" and (given.count, given.sum, answered.sum) == (2, 20, 10)
    assert tuple(given.explicit_bounds) == TOKEN_BUCKETS
    unit, points = got["ratchet.model.cost"]
    assert unit == "{USD}" and point(points, **chat).value == 0.5

    _, points = got["ratchet.tool_call.duration"]
    failed = {
        "gen_ai.tool.name": "refuse",
        "ratchet.op.outcome": "failed",
        "ratchet.task.agent": "asks_then_shouts",
    }
    assert point(points, **failed).count == 1
    assert tuple(point(points, **failed).explicit_bounds) == CALL_BUCKETS
    _, points = got["ratchet.call.duration"]
    assert point(points, **{"ratchet.op.kind": "model", "ratchet.op.outcome": "succeeded"}).count == 2
    _, points = got["ratchet.calls"]
    assert point(points, **{"ratchet.op.kind": "tool", "ratchet.op.outcome": "failed"}).value == 1
    unit, points = got["ratchet.task.duration"]
    ended = point(points, **{"ratchet.task.agent": "asks_then_shouts", "ratchet.task.status": "completed"})
    assert unit == "s" and ended.count == 1 and tuple(ended.explicit_bounds) == TASK_BUCKETS
    _, points = got["ratchet.journal.commit.duration"]
    assert points[0].count > 0
    every = {key for _, (_, pts) in got.items() for p in pts for key in p.attributes}
    assert "ratchet.task.id" not in every  # bounded: never a task's id


async def test_a_failed_model_call_carries_its_error_type(
    store: StateStore, script: Callable[[dict[str, Any]], str], meter_reader: InMemoryMetricReader
) -> None:
    model = script({"act": [{"error": {"status": 400, "message": "bad request"}}]})
    task = await Runtime(store).run(flow("asks_then_shouts"), {"times": 1}, model=model)
    assert task.status is TaskStatus.FAILED
    _, points = read(meter_reader)["gen_ai.client.operation.duration"]
    [failed] = [p for p in points if p.attributes["gen_ai.request.model"] == model.removeprefix("scripted:")]
    assert failed.attributes["ratchet.op.outcome"] == "failed" and failed.attributes["error.type"]


PROGRAM = """
import asyncio, sys
from ratchet import Runtime
from ratchet.observe.recording import current_recorder

async def main() -> None:
    async with Runtime(sys.argv[1]) as runtime:
        task = await runtime.run(sys.argv[2], {"times": 1}, model=sys.argv[3])
    assert task.status == "completed", task.error
    print("metrics api imported:", "opentelemetry.metrics" in sys.modules)
    import opentelemetry.metrics  # the API loaded, no provider set: still nothing
    print("recorder:", current_recorder())

asyncio.run(main())
"""


def test_without_a_meter_provider_nothing_is_reported_or_imported(
    tmp_path: Path, script: Callable[[dict[str, Any]], str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, f"sqlite:///{tmp_path / 'r.db'}", flow("asks_then_shouts"),
         script(priced(0.1, 1))],
        cwd=tmp_path, env=ratchet_env(), capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["metrics api imported: False", "recorder: None"]
