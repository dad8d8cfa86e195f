"""`ratchet.records.compact_json.encode` gives what ``json.dumps`` gives, compact, and refuses the same."""

from __future__ import annotations

import json

import pytest

from ratchet.records.compact_json import encode


@pytest.mark.parametrize(
    "value",
    [
        {"request": "noop", "note": "x" * 40, "n": [1, 2.5, None, True, False]},
        {"text": 'é "quoted" \n tab\t \u2028 ☃', "nested": {"a": {"b": []}}},
        [],
        "plain",
        3,
        {"1": 1, "big": 10**30, "small": 1e-300},
    ],
)
def test_encode_gives_what_json_dumps_gives(value: object) -> None:
    assert encode(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_encode_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        encode({"tags": {"a"}})
