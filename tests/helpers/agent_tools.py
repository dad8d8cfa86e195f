"""The tools of the agent the agent and crash tests run, acting on a `Ledger`.

Workers load these tools by module name (``tests.helpers.agent_tools``), in
this process or in a subprocess, so where their ledger lives comes from the
environment: ``RATCHET_TEST_LEDGER`` names its SQLite file. Every raw call is
an invocation; a keyed tool records its effect once per idempotency key, as a
service honouring the key would.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ratchet
from ratchet import ToolContext

from .ledger import Ledger

LEDGER_VARIABLE = "RATCHET_TEST_LEDGER"
# A file whose presence makes `deploy` raise `SimulatedCrash` once (then the file is gone).
CRASH_VARIABLE = "RATCHET_TEST_CRASH_FILE"


class SimulatedCrash(BaseException):
    """The process "dies" here: nothing the engine does with Exceptions catches it."""


def ledger() -> Ledger:
    path = os.environ.get(LEDGER_VARIABLE)
    if not path:
        raise RuntimeError(f"set {LEDGER_VARIABLE} to the agent tests' ledger file")
    return Ledger(path)


@ratchet.tool(risk="read_only")
def check_status(service: str) -> dict[str, Any]:
    """The status of a service."""
    ledger().invoked("check_status", service)
    return {"service": service, "status": "degraded"}


@ratchet.tool(risk="write_local")
def restart_service(service: str, call: ToolContext) -> dict[str, Any]:
    """Restart a service, under the call's idempotency key."""
    book = ledger()
    book.invoked("restart_service", call.idempotency_key)
    return book.effect_once("restart_service", call.idempotency_key, {"restarted": service})


@ratchet.tool(risk="write_local")
def deploy(version: str, call: ToolContext) -> dict[str, Any]:
    """Deploy a version, under the call's idempotency key; may "crash" the process once."""
    book = ledger()
    book.invoked("deploy", call.idempotency_key)
    marker = os.environ.get(CRASH_VARIABLE)
    if marker and Path(marker).exists():
        Path(marker).unlink()
        raise SimulatedCrash(f"the worker died while deploying {version}")
    return book.effect_once("deploy", call.idempotency_key, {"deployed": version})


@ratchet.tool(risk="read_only")
def fetch_logs(service: str, size: int) -> str:
    """The service's log: `size` characters of it."""
    ledger().invoked("fetch_logs", service)
    line = f"{service}: request served in 12 ms\n"
    return (line * (size // len(line) + 1))[:size]


@ratchet.tool(risk="read_only")
def flaky_probe(service: str) -> str:
    """Probe a service; this one always fails."""
    ledger().invoked("flaky_probe", service)
    raise ratchet.NonRetryableError(f"probe of {service} refused: connection reset")
