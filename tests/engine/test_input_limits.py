"""The Python API refuses what the CLI refuses: instructions too large or not UTF-8, dates out of range,
a cron that never fires. Nothing is stored."""

from __future__ import annotations

import math

import pytest

from ratchet.errors import InputError
from ratchet.limits import MAX_INSTRUCTION_BYTES
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS

WORKFLOW = f"{FLOWS}:stepped"


async def _nothing_stored(store: StateStore) -> None:
    assert await store.list_tasks() == []
    assert await store.list_triggers() == []


async def test_an_instruction_larger_than_the_limit_is_refused(store: StateStore, ledger: str) -> None:
    too_large = "é" * (MAX_INSTRUCTION_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    rt = Runtime(store)
    for attempt in (
        rt.submit(WORKFLOW, {"ledger": ledger}, instruction=too_large),
        rt.run(WORKFLOW, {"ledger": ledger}, instruction=too_large),
        rt.schedule(WORKFLOW, {"ledger": ledger}, instruction=too_large, every="0 9 * * *"),
    ):
        with pytest.raises(InputError, match=f"more than the limit of {MAX_INSTRUCTION_BYTES} bytes"):
            await attempt
    await _nothing_stored(store)


async def test_the_instruction_limit_is_the_runtimes_setting(store: StateStore, ledger: str) -> None:
    rt = Runtime(store, max_instruction_bytes=10)
    with pytest.raises(InputError, match="is 11 bytes, more than the limit of 10 bytes"):
        await rt.submit(WORKFLOW, {"ledger": ledger}, instruction="x" * 11)
    await _nothing_stored(store)

    task_id = await rt.submit(WORKFLOW, {"ledger": ledger}, instruction="x" * 10)
    assert (await store.get_task(task_id)).instruction == "x" * 10


async def test_an_instruction_that_is_not_utf8_is_refused(store: StateStore, ledger: str) -> None:
    with pytest.raises(InputError, match="not valid UTF-8: the byte 0xff at character 5"):
        await Runtime(store).submit(WORKFLOW, {"ledger": ledger}, instruction="bad \udcff")
    await _nothing_stored(store)


@pytest.mark.parametrize("deadline", [1e300, math.nan, math.inf])
async def test_a_deadline_out_of_range_is_refused(store: StateStore, ledger: str, deadline: float) -> None:
    rt = Runtime(store)
    with pytest.raises(InputError, match="deadline"):
        await rt.submit(WORKFLOW, {"ledger": ledger}, deadline=deadline)
    with pytest.raises(InputError, match="deadline"):
        await rt.schedule(WORKFLOW, {"ledger": ledger}, every="0 9 * * *", deadline=deadline)
    await _nothing_stored(store)


async def test_a_cron_that_never_fires_is_refused(store: StateStore, ledger: str) -> None:
    with pytest.raises(InputError, match="never matches"):
        await Runtime(store).schedule(WORKFLOW, {"ledger": ledger}, every="0 0 30 2 *")
    await _nothing_stored(store)
