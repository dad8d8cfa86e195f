"""What a person reads of a task's stream: a model's text as it comes, each attempt of a call apart.

``ratchet stream`` and ``ratchet run`` (plain lines) write a task's stream
(records/stream.py) through `StreamText`: each piece of a model's answer as
it comes, with no line break of its own; a line of its own where an attempt
of a model call begins after an earlier one that was cut off or failed, so a
person never reads two attempts as one answer; a line for an attempt that
failed; and a workflow's values as ``key: JSON`` lines. ``ratchet run``'s
live panel shows the end of the answer being written instead (`Answer`).
What a model wrote is shown as plain text (`ratchet.printable`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from ..printable import printable, printable_json
from ..records import StreamEntry, StreamKind

__all__ = ["Answer", "StreamText", "attempt_line"]

ANSWER_CHARS = 4000
"""How much of the answer being written `Answer` keeps: more than a panel shows, bounded however long."""


def _piece(entry: StreamEntry) -> str:
    value = entry.value
    return printable(value) if isinstance(value, str) else printable_json(value)


def _failure(entry: StreamEntry) -> str | None:
    """How an ``end`` mark's attempt failed, ``"failed"`` with its error if it says one; None: it succeeded.

    Its value is ``{"outcome": "succeeded" | "failed", ...}``.
    """
    value = entry.value if isinstance(entry.value, dict) else {}
    if value.get("outcome") != "failed":
        return None
    error = value.get("error")
    return f"failed: {printable(error)}" if isinstance(error, str) and error else "failed"


def attempt_line(entry: StreamEntry, before: str) -> str:
    """The line that sets an attempt of a model call apart from the one before it (`before`: how it ended)."""
    number = entry.attempt or 1
    call = f"model call #{entry.seq}" if entry.seq is not None else "model call"
    return (
        f"--- {call}, attempt {number} begins (attempt {number - 1} {before}: "
        "what it wrote is not part of this answer) ---"
    )


@dataclass
class StreamText:
    """Writes stream entries to `out` as a person reads them; it remembers what it saw of each call.

    A reader that starts at an offset after a call's earlier attempt still
    sets the next attempt apart: an attempt numbered 2 or more always begins
    on a line of its own.
    """

    out: TextIO
    mid_line: bool = False  # text was written with no line break after it yet
    _open: dict[int | None, int] = field(default_factory=dict)  # seq -> its attempt begun, not ended
    _failed: dict[int | None, int] = field(default_factory=dict)  # seq -> its attempt that failed

    def show(self, entry: StreamEntry) -> None:
        """Write one entry (call `flush` after a batch)."""
        if entry.kind is StreamKind.TEXT:
            piece = _piece(entry)
            if piece:
                self.out.write(piece)
                self.mid_line = not piece.endswith("\n")
        elif entry.kind is StreamKind.ATTEMPT:
            self._attempt(entry)
        elif entry.kind is StreamKind.END:
            self._open.pop(entry.seq, None)
            why = _failure(entry)
            if why is None:
                self.end_line()
            else:
                self._failed[entry.seq] = entry.attempt or 1
                self.line(f"--- model call #{entry.seq}, attempt {entry.attempt or 1} {why} ---")
        else:
            self.line(f"{printable(entry.key or '')}: {printable_json(entry.value)}")

    def _attempt(self, entry: StreamEntry) -> None:
        number = entry.attempt or 1
        cut = self._open.get(entry.seq)
        failed = self._failed.pop(entry.seq, None)
        self._open[entry.seq] = number
        if number == 1 and cut is None:
            self.end_line()  # a call's answer starts on a line of its own
            return
        if cut is not None:
            before = "was cut off"
        elif failed is not None:
            before = "failed"
        else:
            before = "did not finish"
        self.line(attempt_line(entry, before))

    def end_line(self) -> None:
        """End the line the text left open, if it did."""
        if self.mid_line:
            self.out.write("\n")
            self.mid_line = False

    def line(self, text: str) -> None:
        """A line of its own, after the text written so far."""
        self.end_line()
        self.out.write(text + "\n")

    def flush(self) -> None:
        self.out.flush()


@dataclass
class Answer:
    """The model's answer being written, as ``ratchet run``'s panel shows it: the end of its text.

    ``note`` says where the current attempt stands against an earlier one
    (cut off, failed), so the panel never shows two attempts as one text.
    """

    seq: int | None = None
    attempt: int = 1
    text: str = ""
    note: str = ""

    def take(self, entry: StreamEntry) -> None:
        if entry.kind is StreamKind.ATTEMPT:
            number = entry.attempt or 1
            again = number > 1 or (entry.seq == self.seq and self.text != "")
            self.seq, self.attempt, self.text = entry.seq, number, ""
            self.note = f"attempt {number}; attempt {number - 1} did not finish" if again else ""
        elif entry.kind is StreamKind.TEXT:
            if entry.seq != self.seq:  # text of a call whose mark this reader did not see
                self.seq, self.attempt, self.text, self.note = entry.seq, entry.attempt or 1, "", ""
            self.text = (self.text + _piece(entry))[-ANSWER_CHARS:]
        elif entry.kind is StreamKind.END and entry.seq == self.seq:
            why = _failure(entry)
            if why is not None:
                self.note = f"attempt {self.attempt} {why}"

    def tail(self, lines: int) -> str:
        """The last `lines` lines of the text."""
        return "\n".join(self.text.rstrip("\n").split("\n")[-lines:])
