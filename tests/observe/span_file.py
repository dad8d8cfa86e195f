"""Spans written to a JSON-lines file as each ends, so a test can read what a killed process reported.

`SpanFile` is an OpenTelemetry SDK exporter: behind a `SimpleSpanProcessor`
each span is one line, written and flushed when the span ends (a SIGKILL
loses nothing that ended before it). `python -m tests.observe.traced`
installs it in a ``ratchet`` process; `read_spans` reads the file back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

SPANS_VARIABLE = "RATCHET_TEST_SPANS_FILE"
# Set: `tests.observe.traced` installs the SDK's plain TracerProvider(), without Ratchet's stable ids.
PLAIN_VARIABLE = "RATCHET_TEST_PLAIN_PROVIDER"


class SpanFile(SpanExporter):
    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with open(self.path, "a", encoding="utf-8") as out:
            for span in spans:
                context = span.get_span_context()
                assert context is not None
                record = {
                    "name": span.name,
                    "trace_id": context.trace_id,
                    "span_id": context.span_id,
                    "parent_id": span.parent.span_id if span.parent is not None else None,
                    "attributes": dict(span.attributes or {}),
                    "status": span.status.status_code.name,
                    "pid": os.getpid(),
                }
                out.write(json.dumps(record) + "\n")
            out.flush()
        return SpanExportResult.SUCCESS


def read_spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
