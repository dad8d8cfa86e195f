"""The deploy tools of the demo: they write to the ledger instead of a real cluster.

Each takes a `ToolContext` and writes under ``ctx.idempotency_key``, as a tool
that talks to a real registry or cluster passes the key along. Because they
take the key, a call caught in flight by a crash is run again with the same
key on resume (an in-doubt call), and the ledger keeps its effect once.

``apply_manifest`` takes about 1.5 s between starting and taking effect, so
the demo can kill its worker in the middle of it.
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

from ..records import RiskLevel
from ..tools import ToolContext, tool
from .ledger import Ledger

__all__ = ["apply_manifest", "build_image", "check_status", "push_image", "verify_rollout"]

REGISTRY = "registry.example.internal"
CURRENT_VERSION = "1.4.1"
APPLY_SECONDS = 1.5
WORK_SECONDS = 0.3  # long enough to watch the worker go step by step


def _begin(name: str, ctx: ToolContext) -> Ledger:
    ledger = Ledger.from_environment()
    ledger.record_invocation(name, ctx.task_id, ctx.idempotency_key, ctx.attempt)
    return ledger


def _effect(ledger: Ledger, name: str, ctx: ToolContext, detail: dict[str, Any]) -> dict[str, Any]:
    ledger.record_effect(name, ctx.task_id, ctx.idempotency_key, detail)
    return {**detail, "idempotency_key": ctx.idempotency_key}


@tool(risk=RiskLevel.READ_ONLY)
def check_status(service: str, environment: str, ctx: ToolContext) -> dict[str, Any]:
    """Report which version of a service runs in an environment, and whether it is healthy."""
    ledger = _begin("check_status", ctx)
    time.sleep(WORK_SECONDS)
    return _effect(
        ledger,
        "check_status",
        ctx,
        {
            "service": service,
            "environment": environment,
            "running_version": CURRENT_VERSION,
            "healthy": True,
        },
    )


@tool(risk=RiskLevel.WRITE_LOCAL)
def build_image(service: str, version: str, ctx: ToolContext) -> dict[str, Any]:
    """Build the container image of a service at a version."""
    ledger = _begin("build_image", ctx)
    time.sleep(WORK_SECONDS)
    image = f"{REGISTRY}/{service}:{version}"
    digest = "sha256:" + hashlib.sha256(image.encode()).hexdigest()[:16]
    return _effect(ledger, "build_image", ctx, {"image": image, "digest": digest})


@tool(risk=RiskLevel.EXTERNAL_ACTION)
def push_image(image: str, ctx: ToolContext) -> dict[str, Any]:
    """Push a built image to the registry."""
    ledger = _begin("push_image", ctx)
    time.sleep(WORK_SECONDS)
    return _effect(ledger, "push_image", ctx, {"pushed": image, "registry": REGISTRY})


@tool(risk=RiskLevel.EXTERNAL_ACTION)
def apply_manifest(service: str, environment: str, image: str, ctx: ToolContext) -> dict[str, Any]:
    """Apply the service's manifest to an environment, rolling it out to the new image."""
    ledger = _begin("apply_manifest", ctx)
    time.sleep(APPLY_SECONDS)  # the rollout takes a while: the moment the demo crashes in
    return _effect(
        ledger,
        "apply_manifest",
        ctx,
        {
            "service": service,
            "environment": environment,
            "image": image,
            "replicas": 3,
        },
    )


@tool(risk=RiskLevel.READ_ONLY)
def verify_rollout(service: str, environment: str, ctx: ToolContext) -> dict[str, Any]:
    """Check that every replica of a service runs the image last applied."""
    ledger = _begin("verify_rollout", ctx)
    time.sleep(WORK_SECONDS)
    applied = [e for e in ledger.effects(ctx.task_id) if e.tool == "apply_manifest"]
    image = applied[-1].detail["image"] if applied else None
    return _effect(
        ledger,
        "verify_rollout",
        ctx,
        {
            "service": service,
            "environment": environment,
            "image": image,
            "ready_replicas": 3 if image else 0,
            "ready": bool(image),
        },
    )
