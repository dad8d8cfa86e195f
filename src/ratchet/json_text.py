"""JSON a person typed, read strictly and exactly: what the dashboard sends as text.

A browser's ``JSON.parse`` turns every number into a double, so an integer
beyond 2**53 is rounded before a page could send it back (9007199254740993
becomes 9007199254740992). The dashboard therefore sends what a person typed
(edited tool arguments, an in-doubt call's result) as the text itself, and
the server reads it here with Python's reader, whose integers have no size
limit: the call runs with the digits typed.

What is refused, in one line a person can act on: text that is not JSON (with
its line and column), ``NaN`` and ``Infinity`` (JSON has neither), a number
too large for a float, a key given twice in one object (which one was
meant?), an integer longer than Python reads (4,300 digits by default),
nesting deeper than its reader goes, and a lone surrogate escape
(``"\\ud800"``), which no UTF-8 text, and so no store, can hold.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, NoReturn

from pydantic import JsonValue

from .errors import InputError

__all__ = ["read_json_object", "read_json_text"]


def read_json_text(text: str, what: str) -> JsonValue:
    """`text` read as one JSON value, every integer exact; `what` names it in errors ("the result").

    Raises:
        InputError: `text` is not JSON, or holds what the API does not take (above).
    """

    def constant(name: str) -> NoReturn:
        raise InputError(f"{what} must be JSON, which has no {name}")

    def integer(digits: str) -> int:
        limit = sys.get_int_max_str_digits()
        if limit and len(digits.lstrip("-")) > limit:
            raise InputError(f"{what} must hold integers of at most {limit} digits")
        return int(digits)

    def finite(digits: str) -> float:
        value = float(digits)
        if math.isinf(value):
            raise InputError(f"{what} must hold no number too large for a float ({digits[:40]})")
        return value

    def one_of_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, item in pairs:
            if key in found:
                raise InputError(
                    f"{what} must give each key of an object once: {json.dumps(key)} comes twice"
                )
            found[key] = item
        return found

    try:
        value: JsonValue = json.loads(
            text,
            parse_constant=constant,
            parse_int=integer,
            parse_float=finite,
            object_pairs_hook=one_of_each,
        )
    except json.JSONDecodeError as error:
        raise InputError(
            f"{what} must be JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{what} must be nested less deeply to be read") from None
    try:
        json.dumps(value, ensure_ascii=False).encode()
    except UnicodeEncodeError as error:
        lone = f"\\u{ord(error.object[error.start]):04x}"
        raise InputError(f"{what} must hold Unicode text only, not a lone surrogate ({lone})") from None
    return value


def read_json_object(text: str, what: str, example: str) -> dict[str, JsonValue]:
    """`text` read as `read_json_text` reads it, and a JSON object; `example` shows one in the error.

    Raises:
        InputError: `text` is not JSON, or not an object.
    """
    value = read_json_text(text, what)
    if not isinstance(value, dict):
        raise InputError(f"{what} must be a JSON object, e.g. {example}")
    return value
