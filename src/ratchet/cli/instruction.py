"""The instruction `ratchet run` and `ratchet submit` take: the argument, or standard input for ``-``.

It is checked before anything else is: not empty, UTF-8 text, no larger
than the limit. Standard input is read no further than one byte past the
limit, so a huge input is refused without being held in memory.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from ..errors import InputError
from ..limits import check_instruction

__all__ = ["STDIN", "read_instruction"]

STDIN = "-"


def read_instruction(given: str, *, limit: int) -> str:
    """The instruction `given` on the command line (``-``: read from standard input), checked.

    Raises:
        InputError: it is empty, not UTF-8 text, or larger than `limit` bytes.
    """
    text = _read(sys.stdin.buffer, limit) if given == STDIN else given
    if not text.strip():
        raise InputError("the instruction is empty; say what the agent should do")
    check_instruction(text, limit=limit)
    return text


def _read(stdin: BinaryIO, limit: int) -> str:
    data = stdin.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            f"the instruction on standard input is more than the limit of {limit} bytes; put the "
            "material in a file the agent's tools read, or raise the limit (--max-instruction-bytes)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"the instruction on standard input is not valid UTF-8: the byte 0x{data[error.start]:02x} "
            f"at byte {error.start + 1}; give it as UTF-8 text"
        ) from None
    return text.rstrip("\n")  # as the shell's $(...) would: `echo` ends it with a newline
