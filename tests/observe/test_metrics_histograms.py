"""What a run's calls and tasks add to the metrics: durations by kind, model, tool and agent, tokens, cost.

The task runs in this process while `recording`; its scripted model's answers
carry a price, as a priced provider's would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from ratchet import Runtime, TaskStatus
from ratchet.observe import recording
from ratchet.observe.metrics import Metrics, metrics_asgi_app
from ratchet.store import StateStore

from .metrics_flows import flow, priced
from .metrics_support import parse, value


async def test_calls_and_tasks_are_measured_by_kind_model_tool_and_agent(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    metrics = Metrics(store)
    model = script(priced(0.25, 2))
    with recording(metrics):
        task = await Runtime(store).run(flow("asks_then_shouts"), {"times": 2}, model=model)
    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ["answer 0", "answer 1", "DONE", "refused"]
    text = (await metrics.exposition()).decode()
    got = parse(text)

    assert value(got, "ratchet_call_duration_seconds_count", kind="model", outcome="succeeded") == 2
    assert value(got, "ratchet_call_duration_seconds_count", kind="tool", outcome="succeeded") == 1
    assert value(got, "ratchet_call_duration_seconds_count", kind="tool", outcome="failed") == 1
    assert value(got, "ratchet_model_call_duration_seconds_count", model=model, outcome="succeeded") == 2
    assert (
        value(got, "ratchet_model_call_duration_seconds_bucket", model=model, outcome="succeeded", le="+Inf")
        == 2
    )
    assert value(got, "ratchet_tool_call_duration_seconds_count", tool="shout", outcome="succeeded") == 1
    assert value(got, "ratchet_tool_call_duration_seconds_count", tool="refuse", outcome="failed") == 1
    assert value(got, "ratchet_tool_call_duration_seconds_sum", tool="shout", outcome="succeeded") > 0
    agent = "asks_then_shouts"  # a workflow's task: the workflow's name is its agent
    assert value(got, "ratchet_task_duration_seconds_count", agent=agent, outcome="completed") == 1
    assert value(got, "ratchet_model_tokens_total", agent=agent, model=model, type="input") == 20
    assert value(got, "ratchet_model_tokens_total", agent=agent, model=model, type="output") == 10
    assert value(got, "ratchet_model_cost_usd_total", agent=agent, model=model) == 0.5
    assert value(got, "ratchet_calls_total", kind="tool", outcome="failed") == 1
    # Bounded labels: nothing of a task (its id, its inputs) is a label.
    assert task.id not in text
    labels = {name for (_, pairs) in got for name, _ in pairs}
    assert labels <= {"kind", "outcome", "model", "tool", "agent", "type", "status", "le"}


async def test_a_replayed_task_adds_nothing_and_a_free_model_costs_nothing(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    metrics = Metrics(store)
    model = script({"act": [{"content": "free"}]})  # the scripted model's own token estimate, no price
    runtime = Runtime(store)
    with recording(metrics):
        task = await runtime.run(flow("asks_then_shouts"), {"times": 1}, model=model)
        before = parse((await metrics.exposition()).decode())
        await runtime.resume(task.id)  # over already: nothing runs, nothing is counted again
    after = parse((await metrics.exposition()).decode())
    agent = "asks_then_shouts"
    assert value(before, "ratchet_model_tokens_total", agent=agent, model=model, type="input") > 0
    assert ("ratchet_model_cost_usd_total", frozenset({("agent", agent), ("model", model)})) not in before
    counted = {key: number for key, number in after.items() if not key[0].startswith("ratchet_journal")}
    assert counted == {
        key: number for key, number in before.items() if not key[0].startswith("ratchet_journal")
    }


async def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(store: StateStore) -> None:
    import fastapi

    app = fastapi.FastAPI()
    app.add_route("/metrics", metrics_asgi_app(store), include_in_schema=False)  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        plain = await client.get("/metrics")
        opened = await client.get(
            "/metrics", headers={"accept": "application/openmetrics-text; version=1.0.0,text/plain;q=0.5"}
        )
    assert plain.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert opened.status_code == 200
    assert opened.headers["content-type"].startswith("application/openmetrics-text")
    assert opened.text.endswith("# EOF\n")
    families = {family.name: family for family in openmetrics_families(opened.text)}  # type: ignore[no-untyped-call]
    assert families["ratchet_calls"].type == "counter"
    assert families["ratchet_model_call_duration_seconds"].type == "histogram"
    assert [s.value for s in families["ratchet_tasks"].samples if s.labels == {"status": "queued"}] == [0]
