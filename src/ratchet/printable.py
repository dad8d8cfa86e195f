"""Text from models, tools and people, made safe to show on a terminal.

Whatever a model, a tool or a person wrote (a goal, a step's name, a tool's
arguments, an error, an event's message) is shown as plain text: never read
as Rich markup (``[bold]``, ``[link=...]``, ``[/a]`` stay as written), and
with every character a terminal would act on instead of showing made
visible, as Python's ``repr`` writes it: ESC is ``\\x1b``, CR ``\\r``, a C1
control such as CSI ``\\x9b``, a bidirectional override ``\\u202e``. So a
clear-screen, a window title or an OSC-8 hyperlink never reaches the terminal
raw, and no text can hide or reorder what is around it. Newline and tab are
kept. A backslash is shown as itself, so ``\\x1b`` typed as four characters
looks the same as an escaped ESC; where exactness matters (a tool call's
arguments), `printable_json` shows JSON, which has no such ambiguity.
"""

from __future__ import annotations

import json
import re

from pydantic import JsonValue
from rich.text import Text

__all__ = ["plain", "printable", "printable_json"]

# C0 controls but tab and newline, DEL and the C1 controls; the bidirectional marks, embeddings,
# overrides and isolates; the line and paragraph separators; lone surrogates (undecodable bytes).
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _as_python_writes_it(found: re.Match[str]) -> str:
    char = found.group()
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _as_json_writes_it(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def printable(text: str) -> str:
    """`text` with every character a terminal would act on written as its escape (``\\x1b``)."""
    return _HIDDEN.sub(_as_python_writes_it, text)


def plain(text: str, style: str = "") -> Text:
    """`text` as Rich `Text` in `style`: never read as markup, its control characters visible."""
    return Text(printable(text), style=style)


def printable_json(value: JsonValue, *, indent: int | None = None) -> str:
    """`value` as JSON that reads back to exactly `value`, safe on a terminal (one line unless `indent`).

    JSON escapes the C0 controls itself; the other characters `printable`
    makes visible are written as JSON escapes (``\\u009b``), so it is still
    valid JSON for the same value.
    """
    return _HIDDEN.sub(_as_json_writes_it, json.dumps(value, indent=indent, ensure_ascii=False))
