"""`promtool check metrics` (Prometheus's own checker) on a worker's real /metrics, after real tasks ran.

promtool comes with Debian's `prometheus` package, which
scripts/install-system-packages installs.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families

from ratchet.records import TaskStatus

from ..cli.task_support import start_ratchet, stop_with, stored_task, with_runtime
from .metrics_flows import FLOWS, flow, priced
from .metrics_support import free_port, parse, scrape, value

HISTOGRAMS = (
    "ratchet_call_duration_seconds",
    "ratchet_model_call_duration_seconds",
    "ratchet_tool_call_duration_seconds",
    "ratchet_task_duration_seconds",
    "ratchet_journal_commit_seconds",
)


def test_promtool_passes_a_worker_s_metrics_with_every_histogram(tmp_path: Path, url: str) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(priced(0.01, 4)), encoding="utf-8")
    model = f"scripted:{script}"
    port = free_port()
    worker = start_ratchet(
        tmp_path,
        "worker",
        "--store",
        url,
        "--poll",
        "0.05",
        "--workflows",
        str(FLOWS),
        "--metrics-port",
        str(port),
    )
    try:
        scrape(port)  # up
        ids = [
            with_runtime(url, lambda rt: rt.submit(flow("asks_then_shouts"), {"times": 2}, model=model))
            for _ in range(2)
        ]
        deadline = time.monotonic() + 30
        while value(scrape(port), "ratchet_tasks", status="completed") < 2:
            assert time.monotonic() < deadline, worker.stderr
            time.sleep(0.05)
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        opened = httpx.get(
            f"http://127.0.0.1:{port}/metrics",
            headers={"accept": "application/openmetrics-text; version=1.0.0"},
            timeout=5,
        )
    finally:
        _out, err = stop_with(worker, signal.SIGTERM)
    assert worker.returncode == 0, err
    assert [stored_task(url, task_id).status for task_id in ids] == [TaskStatus.COMPLETED] * 2

    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60, check=False
    )
    assert checked.returncode == 0 and not checked.stdout.strip(), checked.stdout + checked.stderr
    for name in HISTOGRAMS:
        assert f"# TYPE {name} histogram" in text
    assert opened.headers["content-type"].startswith("application/openmetrics-text")
    families = {family.name for family in openmetrics_families(opened.text)}  # type: ignore[no-untyped-call]
    assert set(HISTOGRAMS) <= families
    got = parse(text)
    assert value(got, "ratchet_model_call_duration_seconds_count", model=model, outcome="succeeded") == 4
    assert (
        value(got, "ratchet_tool_call_duration_seconds_bucket", tool="refuse", outcome="failed", le="+Inf")
        == 2
    )
    assert (
        value(got, "ratchet_task_duration_seconds_count", agent="asks_then_shouts", outcome="completed") == 2
    )
    assert value(got, "ratchet_model_cost_usd_total", agent="asks_then_shouts", model=model) == pytest.approx(
        0.04
    )
    assert (
        value(got, "ratchet_model_tokens_total", agent="asks_then_shouts", model=model, type="output") == 20
    )
