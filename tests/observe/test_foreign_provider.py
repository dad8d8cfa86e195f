"""One trace per task under a tracer provider the program installed itself, without `stable_ids`.

Each case is a process of its own (`tests.observe.foreign_provider`): OpenTelemetry takes one
global provider per process, and this suite's is set with Ratchet's ids (conftest.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet.observe import span_id_for, trace_id_for

from ..helpers.ledger import Ledger
from .span_file import SPANS_VARIABLE, read_spans
from .test_genai_spans import SCRIPT

ROOT = Path(__file__).parents[2]
TASK_ID = "foreign"


def spans_under(kind: str, model: str, tmp_path: Path) -> list[dict[str, Any]]:
    out = tmp_path / f"{kind}.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "tests.observe.foreign_provider", kind, model, TASK_ID],
        cwd=ROOT,
        env={**os.environ, SPANS_VARIABLE: str(out)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return read_spans(out)


@pytest.mark.parametrize("kind", ["sdk", "wrapped"])
def test_an_sdk_provider_gets_one_trace_per_task_whose_parents_resolve(
    kind: str, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger, tmp_path: Path
) -> None:
    spans = spans_under(kind, script(SCRIPT), tmp_path)
    assert {span["trace_id"] for span in spans} == {trace_id_for(TASK_ID)}
    ids = Counter(span["span_id"] for span in spans)
    assert max(ids.values()) == 1
    [root] = [span for span in spans if span["parent_id"] is None]
    assert root["name"] == "invoke_agent ops" and root["span_id"] == span_id_for(TASK_ID, "task")
    assert all(span["parent_id"] in ids for span in spans if span is not root)  # every parent is reported
    [step] = [span for span in spans if span["name"] == "step 1: look at X"]
    [library] = [span for span in spans if span["name"] == "library span"]
    assert library["parent_id"] == step["span_id"] == span_id_for(TASK_ID, "step", 0)
    assert {span["name"] for span in spans} >= {"execute_tool check_status", "library span"}


def test_a_provider_that_hides_its_sdk_tracer_still_gets_one_trace_per_task(
    script: Callable[[dict[str, Any]], str], tools_ledger: Ledger, tmp_path: Path
) -> None:
    spans = spans_under("hidden", script(SCRIPT), tmp_path)
    assert {span["trace_id"] for span in spans} == {trace_id_for(TASK_ID)}
    # No span is a root started anew: the task's span, like its steps, hangs under the task's
    # derived span id, which no span carries here (random ids: docs/observability.md).
    assert all(span["parent_id"] is not None for span in spans)
    [task] = [span for span in spans if "ratchet.task.status" in span["attributes"]]
    steps = [span for span in spans if "ratchet.step.name" in span["attributes"]]
    assert {task["parent_id"]} | {step["parent_id"] for step in steps} == {span_id_for(TASK_ID, "task")}
    assert task["span_id"] != span_id_for(TASK_ID, "task")
