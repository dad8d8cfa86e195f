"""What long-running commands share to be watched: log lines on stderr, and traces if asked for.

`observe_process` is called once by ``worker``, ``run``, ``resume`` and
``mcp`` (and ``serve``): it sends the ``ratchet`` loggers to stderr at the
``--log-level`` given, each line as text for people or, with ``--log-format
json``, as one JSON object for a log collector; and it turns on
OpenTelemetry tracing when the ``OTEL_*`` environment asks for it
(`ratchet.observe.configure_tracing`).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import logging
import sys

from ..observe import configure_tracing
from ..printable import printable

__all__ = ["JsonFormatter", "LogFormat", "LogLevel", "observe_process"]


class LogLevel(enum.StrEnum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class LogFormat(enum.StrEnum):
    TEXT = "text"
    JSON = "json"


class _PrintableFormatter(logging.Formatter):
    """Log lines quote what tasks' models and tools wrote (an error): control characters shown, not run."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and
    ``exception`` when there is one. JSON escapes every control character, and ASCII is kept, so a
    line is safe on a terminal and one record to a collector however many lines its message has."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def observe_process(level: LogLevel, log_format: LogFormat = LogFormat.TEXT) -> None:
    """Log Ratchet's lines at `level` and above to stderr in `log_format`; start tracing if
    ``OTEL_*`` asks for it."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format is LogFormat.JSON:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            _PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S")
        )
    # Other libraries keep to warnings unless debugging: their info lines are not the user's business.
    root_level = logging.DEBUG if level is LogLevel.DEBUG else logging.WARNING
    logging.basicConfig(level=root_level, handlers=[handler], force=True)
    logging.getLogger("ratchet").setLevel(level.upper())
    # psycopg's pool warns at each failed attempt to reconnect (a failover: one a second or more),
    # and psycopg at each pipeline a lost connection broke; the store and the worker say once that
    # the database is gone, and once that it is back.
    logging.getLogger("psycopg").setLevel(root_level if level is LogLevel.DEBUG else logging.ERROR)
    configure_tracing()
