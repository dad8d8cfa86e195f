"""Compact JSON text for what Ratchet stores: one encoder, made once.

``json.JSONEncoder.encode`` builds a new C encoder on every call, which costs
more than encoding a journal-sized value (a tool's arguments, its result); the
journal encodes a few per call, so the encoder here is built once. The text
is what ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` gives.
"""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NoReturn

__all__ = ["encode"]


def _unencodable(value: object) -> NoReturn:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# No check for cycles (markers=None): every value encoded here was made JSON-ready by a
# model's validation or pydantic's serializer first, and both reject a cycle.
_c_encode = (
    None
    if c_make_encoder is None  # a Python without json's C speedups
    else c_make_encoder(None, _unencodable, encode_basestring, None, ":", ",", False, False, True)
)
_slow_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode(value: Any) -> str:
    """`value` as compact JSON, non-ASCII characters kept as they are.

    Raises:
        TypeError: `value` holds something JSON cannot (a set, an object).
    """
    if _c_encode is None:
        return _slow_encode(value)
    return "".join(_c_encode(value, 0))
