"""``python -m tests.observe.traced ARGS``: the ``ratchet`` command, its spans written to a file.

The file is named by ``RATCHET_TEST_SPANS_FILE``; the tracer provider uses
Ratchet's stable ids, as the one `ratchet.observe.configure_tracing` installs,
unless ``RATCHET_TEST_PLAIN_PROVIDER`` is set: then it is the SDK's plain
``TracerProvider()``, as a program that installs its own would have.
"""

from __future__ import annotations

import os

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from ratchet.cli import main
from ratchet.observe import stable_ids

from .span_file import PLAIN_VARIABLE, SPANS_VARIABLE, SpanFile

provider = TracerProvider() if os.environ.get(PLAIN_VARIABLE) else TracerProvider(id_generator=stable_ids())
provider.add_span_processor(SimpleSpanProcessor(SpanFile(os.environ[SPANS_VARIABLE])))
trace.set_tracer_provider(provider)
main()
