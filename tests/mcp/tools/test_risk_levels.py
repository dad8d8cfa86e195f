"""MCP annotations onto risk levels, and the overrides that win over them."""

from __future__ import annotations

from typing import Any

import pytest

from ratchet.agent.mcp.servers import tool_behaviour
from ratchet.records import RiskLevel

READ_ONLY = (RiskLevel.READ_ONLY, True)
IDEMPOTENT = (RiskLevel.WRITE_LOCAL, True)
EXTERNAL = (RiskLevel.EXTERNAL_ACTION, False)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({"readOnlyHint": True}, READ_ONLY),
        ({"readOnlyHint": True, "destructiveHint": True}, READ_ONLY),  # a read changes nothing
        ({"idempotentHint": True}, IDEMPOTENT),
        ({"destructiveHint": False, "idempotentHint": True}, IDEMPOTENT),
        ({"destructiveHint": True}, EXTERNAL),
        ({"destructiveHint": True, "idempotentHint": True}, (RiskLevel.EXTERNAL_ACTION, True)),
        ({"readOnlyHint": False, "openWorldHint": True}, EXTERNAL),
        ({}, EXTERNAL),
        (None, EXTERNAL),
    ],
)
def test_annotations_give_the_level(
    annotations: dict[str, Any] | None, expected: tuple[RiskLevel, bool]
) -> None:
    assert tool_behaviour(annotations) == expected


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("read_only", READ_ONLY),
        ("idempotent", IDEMPOTENT),
        ("write_local", (RiskLevel.WRITE_LOCAL, False)),
        ("external_action", EXTERNAL),
    ],
)
def test_an_override_wins_over_the_annotations(override: str, expected: tuple[RiskLevel, bool]) -> None:
    assert tool_behaviour({"readOnlyHint": True}, override) == expected
    assert tool_behaviour({}, override) == expected
