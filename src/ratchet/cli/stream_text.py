"""What a person reads of a task's stream: a model's text as it comes, each attempt of a call apart.

``ratchet stream`` and ``ratchet run`` (plain lines) write a task's stream
(records/stream.py) through `StreamText`: each piece of a model's answer as
it comes, with no line break of its own; a line of its own where an attempt
of a model call begins after an earlier one that was cut off, stopped or
failed (also an attempt begun again with the same number after its worker
was killed), so a person never reads two attempts as one answer; a line for
an attempt that failed or was cut off or stopped; a line where the store
lost entries (a mark's ``dropped``); and a workflow's values as ``key:
JSON`` lines. ``ratchet run``'s live panel shows the end of the answer
being written instead (`Answer`).
What a model wrote is shown as plain text (`ratchet.printable`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TextIO

from pydantic import JsonValue

from ..printable import printable, printable_json
from ..records import StreamEntry, StreamKind

__all__ = ["Answer", "StreamText", "attempt_line"]

ANSWER_CHARS = 4000
"""How much of the answer being written `Answer` keeps: more than a panel shows, bounded however long."""


def _piece(entry: StreamEntry) -> str:
    value = entry.value
    return printable(value) if isinstance(value, str) else printable_json(value)


def _mark(entry: StreamEntry) -> dict[str, JsonValue]:
    return entry.value if isinstance(entry.value, dict) else {}


def _ending(entry: StreamEntry) -> str | None:
    """How an ``end`` mark's attempt ended, said for a person; None: it succeeded.

    Its value is ``{"outcome": "succeeded"}``, ``{"outcome": "failed",
    "error_type": NAME}`` or ``{"outcome": "interrupted"}``, with ``"cut_at"``
    when its worker was killed mid-answer (docs/streaming.md). An outcome
    this reader does not know is not taken for success.
    """
    mark = _mark(entry)
    outcome = mark.get("outcome")
    if outcome == "succeeded":
        return None
    if outcome == "interrupted":
        return "was cut off" if "cut_at" in mark else "was stopped"
    error = mark.get("error_type")
    return f"failed: {printable(error)}" if isinstance(error, str) and error else "failed"


def _lost(entry: StreamEntry) -> int:
    """How many entries before this mark the store lost (its ``"dropped"``), 0 for none.

    Only the engine's marks say it; a workflow's value is its own JSON.
    """
    if entry.kind not in (StreamKind.ATTEMPT, StreamKind.END):
        return 0
    dropped = _mark(entry).get("dropped")
    return dropped if isinstance(dropped, int) and not isinstance(dropped, bool) and dropped > 0 else 0


def _call(entry: StreamEntry) -> str:
    return f"model call #{entry.seq}" if entry.seq is not None else "model call"


def attempt_line(entry: StreamEntry, before: str, earlier: int | None = None) -> str:
    """The line that sets an attempt of a model call apart from the one before it.

    `before` says how that one ended; `earlier` is its number (by default
    the one before this, or this one's own for a restarted attempt).
    """
    number = entry.attempt or 1
    restarted = _mark(entry).get("restarted") is True
    if earlier is None:
        earlier = number if restarted else number - 1
    begins = "begins again" if restarted and earlier == number else "begins"
    return (
        f"--- {_call(entry)}, attempt {number} {begins} (attempt {earlier} {before}: "
        "what it wrote is not part of this answer) ---"
    )


@dataclass
class StreamText:
    """Writes stream entries to `out` as a person reads them; it remembers what it saw of each call.

    An attempt begins on a line of its own when it is numbered 2 or more,
    when it is marked ``restarted`` (a killed worker's attempt made again,
    with the same number), or when this reader saw an earlier attempt of
    the same call that did not succeed: so a reader that starts at an offset after a call's
    earlier attempt still sets the next one apart.
    """

    out: TextIO
    mid_line: bool = False  # text was written with no line break after it yet
    _open: dict[int | None, int] = field(default_factory=dict)  # seq -> its attempt begun, not ended
    # seq -> its last attempt that ended and did not succeed, and how it ended
    _ended: dict[int | None, tuple[int, str]] = field(default_factory=dict)

    def show(self, entry: StreamEntry) -> None:
        """Write one entry (call `flush` after a batch)."""
        if entry.kind is StreamKind.TEXT:
            piece = _piece(entry)
            if piece:
                self.out.write(piece)
                self.mid_line = not piece.endswith("\n")
            return
        lost = _lost(entry)
        if lost:
            entries = "entry" if lost == 1 else "entries"
            self.line(f"--- {lost} stream {entries} lost here (the store refused them) ---")
        if entry.kind is StreamKind.ATTEMPT:
            self._attempt(entry)
        elif entry.kind is StreamKind.END:
            self._open.pop(entry.seq, None)
            how = _ending(entry)
            if how is None:
                self._ended.pop(entry.seq, None)
                self.end_line()
            else:
                self._ended[entry.seq] = (entry.attempt or 1, how)
                self.line(f"--- {_call(entry)}, attempt {entry.attempt or 1} {how} ---")
        else:
            self.line(f"{printable(entry.key or '')}: {printable_json(entry.value)}")

    def _attempt(self, entry: StreamEntry) -> None:
        number = entry.attempt or 1
        cut = self._open.get(entry.seq)
        ended = self._ended.pop(entry.seq, None)
        self._open[entry.seq] = number
        mark = _mark(entry)
        restarted = mark.get("restarted") is True
        if number == 1 and not restarted and cut is None and ended is None:
            self.end_line()  # a call's answer starts on a line of its own
            return
        if cut is not None:  # begun again with no end between: the one before was cut
            earlier, before = cut, "was cut off"
        elif ended is not None:
            earlier, before = ended[0], "failed" if ended[1].startswith("failed") else ended[1]
        elif restarted:
            earlier, before = number, "was cut off" if "cut_at" in mark else "did not finish"
        else:
            earlier, before = number - 1, "did not finish"
        self.line(attempt_line(entry, before, earlier))

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
            restarted = _mark(entry).get("restarted") is True
            again = number > 1 or restarted or (entry.seq == self.seq and self.text != "")
            self.seq, self.attempt, self.text = entry.seq, number, ""
            if restarted:
                self.note = f"attempt {number} again; the cut-off run's text is not part of the answer"
            elif again:
                self.note = f"attempt {number}; attempt {number - 1} did not finish"
            else:
                self.note = ""
        elif entry.kind is StreamKind.TEXT:
            if entry.seq != self.seq:  # text of a call whose mark this reader did not see
                self.seq, self.attempt, self.text, self.note = entry.seq, entry.attempt or 1, "", ""
            self.text = (self.text + _piece(entry))[-ANSWER_CHARS:]
        elif entry.kind is StreamKind.END and entry.seq == self.seq:
            how = _ending(entry)
            if how is not None:
                self.note = f"attempt {self.attempt} {how}"

    def tail(self, lines: int) -> str:
        """The last `lines` lines of the text."""
        return "\n".join(self.text.rstrip("\n").split("\n")[-lines:])
