"""What long-running commands share to be watched: log lines on stderr, and traces if asked for.

`observe_process` is called once by ``worker``, ``run``, ``resume`` and
``mcp`` (and ``serve``): it sends the ``ratchet`` loggers to stderr at the
``--log-level`` given, and turns on OpenTelemetry tracing when the
``OTEL_*`` environment asks for it (`ratchet.observe.configure_tracing`).
"""

from __future__ import annotations

import enum
import logging
import sys

from ..observe import configure_tracing
from ..printable import printable

__all__ = ["LogLevel", "observe_process"]


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class _PrintableFormatter(logging.Formatter):
    """Log lines quote what tasks' models and tools wrote (an error): control characters shown, not run."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def observe_process(level: LogLevel) -> None:
    """Log Ratchet's lines at `level` and above to stderr; start tracing if ``OTEL_*`` asks for it."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    # Other libraries keep to warnings unless debugging: their info lines are not the user's business.
    root_level = logging.DEBUG if level is LogLevel.DEBUG else logging.WARNING
    logging.basicConfig(level=root_level, handlers=[handler], force=True)
    logging.getLogger("ratchet").setLevel(level.upper())
    configure_tracing()
