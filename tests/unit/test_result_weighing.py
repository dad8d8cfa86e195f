"""A tool result stays inline exactly when its JSON fits the limit, whether it was weighed encoded or not.

`set_aside` counts a bound of a flat result's JSON without encoding it (the
store encodes it once); these values, near the limit's edge and with the
characters JSON widens most, must get the answer encoding them gives.
"""

from __future__ import annotations

import datetime as dt
import random

from pydantic import JsonValue

from ratchet.engine.journal.large_results import set_aside
from ratchet.records import Operation, OpKind, OpStatus
from ratchet.records.compact_json import encode

CHARACTERS = ["a", "é", "€", "😀", "\x00", "\x1f", '"', "\\", "\n", "\ud800"]


def _scalar(rng: random.Random) -> JsonValue:
    pick = rng.randrange(6)
    if pick == 0:
        return "".join(rng.choice(CHARACTERS) for _ in range(rng.randrange(40)))
    if pick == 1:
        return rng.choice([0, -1, 10**19, -(10**19) + 1, 10**20, -(10**30), 2**70])
    if pick == 2:
        return rng.choice([0.1, -2.2250738585072014e-308, 1e308, float("inf"), float("nan"), -0.0])
    return rng.choice([True, False, None, "x" * rng.randrange(200)])


def _operation(output: JsonValue) -> Operation:
    return Operation(
        task_id="t",
        seq=1,
        kind=OpKind.TOOL,
        name="tool",
        attempt=1,
        idempotency_key="t:1",
        status=OpStatus.SUCCEEDED,
        output=output,
        started_at=dt.datetime.now(dt.UTC),
    )


def test_a_flat_result_stays_inline_exactly_when_its_json_fits() -> None:
    rng = random.Random(34)
    for _ in range(3_000):
        size = rng.randrange(8)
        output: JsonValue
        if rng.random() < 0.5:
            output = {
                "".join(rng.choice(CHARACTERS) for _ in range(rng.randrange(6))): _scalar(rng)
                for _ in range(size)
            }
        else:
            output = [_scalar(rng) for _ in range(size)]
        if rng.random() < 0.1:
            output = {"nested": output}
        length = len(encode(output).encode("utf-8", "surrogatepass"))
        for limit in (length - 1, length, length + 1, length * 6, 16):
            moved = set_aside(_operation(output), limit)
            assert (moved is None) == (length <= limit), (output, limit, length)
            if moved is not None:
                assert moved[2] == encode(output).encode("utf-8", "surrogatepass")
