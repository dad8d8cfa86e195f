"""Spend caps as the ``ratchet budget`` command shows them (one JSON shape, docs/limits.md)."""

from __future__ import annotations

from typing import Any

from ..records import CapSpend

__all__ = ["cap_json"]


def cap_json(spend: CapSpend) -> dict[str, Any]:
    """A cap, and what its tasks spent on the day it was read for."""
    cap = spend.cap
    return {
        "cap": cap.target,
        "scope": str(cap.scope),
        "name": cap.name,
        "daily": cap.daily,
        "approve_over": cap.approve_over,
        "day": spend.day.isoformat(),
        "spent": spend.spent,
        "reached": spend.reached,
        "created_at": cap.created_at.isoformat(),
        "updated_at": cap.updated_at.isoformat(),
    }
