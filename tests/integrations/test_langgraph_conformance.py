"""LangGraph's own checkpointer conformance suite, unmodified, against RatchetSaver on every store.

`validate` detects which capabilities a saver implements (the methods it
overrides) and runs each one's tests on a fresh saver; RatchetSaver must have
all eight detected and every test of each passing, on memory, SQLite (a file)
and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability

from ratchet.integrations.langgraph import RatchetSaver


async def test_every_capability_of_the_conformance_suite_is_detected_and_passes(
    store_kind: str, store_url: str
) -> None:
    @checkpointer_test(name=f"RatchetSaver on {store_kind}")
    async def saver() -> AsyncIterator[RatchetSaver]:
        async with RatchetSaver.from_conn_string(store_url) as opened:
            yield opened

    report = await validate(saver)

    assert sorted(report.results) == sorted(capability.value for capability in Capability)
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert failures == {}
    for name, result in report.results.items():
        assert result.detected, name
        assert result.passed is True, name
        assert result.tests_skipped == 0, name
        assert result.tests_failed == 0, name
        assert result.tests_passed > 0, name
    assert report.conformance_level() == "FULL"
