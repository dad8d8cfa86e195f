"""Tool calls answered from a recorded run: the middleware that keeps an eval from touching the world.

A new run of a recorded task makes its model calls live, and every tool call
goes to `RecordedTools`, which answers it from the recorded task's journal and
never lets it reach the tool. The rule (docs/evals.md, "Which recorded call
answers"): a call is answered by the recording's first unused tool call of
the same name and the same arguments (compared as JSON values), in the
recording's order. So the k-th call of ``append(line='a')`` gets what the
recording's k-th call of it returned, whatever else came between, and a call
made more often than recorded, or with other arguments, has no answer. Such a
call is not run: the run stops there (`NotInRecording`), and the eval reports
it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from ...engine.calls import WorkerStopping
from ...engine.calls.call import Call
from ...engine.calls.middleware import Proceed
from ...errors import OperationFailed
from ...records import Operation, OpKind, OpStatus
from .report import EvalToolCall

__all__ = ["NotInRecording", "RecordedCall", "RecordedTools", "Recording"]


class NotInRecording(WorkerStopping):
    """A tool call the recording has no answer for: the new run stops before it (nothing runs).

    A `WorkerStopping`, so every layer lets it through untouched and the run
    unwinds as a stopping worker's does, with nothing recorded for the call.
    """


@dataclass(frozen=True)
class RecordedCall:
    """One finished tool call of the recording, its output read back whole (not an artifact's reference)."""

    op: Operation
    output: JsonValue

    @property
    def call(self) -> EvalToolCall:
        failed = self.op.status is OpStatus.FAILED
        return EvalToolCall(
            name=self.op.name,
            arguments=self.op.input,
            output=None if failed else self.output,
            error=self.op.error if failed else None,
        )


def _key(name: str, arguments: JsonValue) -> str:
    return json.dumps([name, arguments], sort_keys=True, separators=(",", ":"), default=str)


@dataclass
class Recording:
    """A recorded task's tool calls, served once each, and the calls the new run made."""

    calls: Sequence[RecordedCall]
    made: dict[int, EvalToolCall] = field(default_factory=dict)  # by the new run's seq
    missing: EvalToolCall | None = None
    _used: set[int] = field(default_factory=set)

    def serve(self, seq: int, name: str, arguments: JsonValue) -> RecordedCall | None:
        """The recorded call that answers this one (and mark it used), or None."""
        wanted = _key(name, arguments)
        for index, recorded in enumerate(self.calls):
            if index not in self._used and _key(recorded.op.name, recorded.op.input) == wanted:
                self._used.add(index)
                self.made[seq] = recorded.call
                return recorded
        return None

    def new_calls(self) -> list[EvalToolCall]:
        """The new run's tool calls in its order, the one the recording lacked last."""
        made = [self.made[seq] for seq in sorted(self.made)]
        return made if self.missing is None else [*made, self.missing]


class RecordedTools:
    """The middleware that answers every tool call from a `Recording` and runs none.

    It sits just inside the events layer (a workflow's own middleware), so a
    tool call never reaches the approval, journal or retry layers, nor the
    tool: a recorded failure is raised as the `OperationFailed` the journal
    layer would have raised.
    """

    def __init__(self, recording: Recording) -> None:
        self.recording = recording

    async def __call__(self, call: Call, proceed: Proceed) -> JsonValue:
        if call.kind is not OpKind.TOOL:
            return await proceed(call)
        served = self.recording.serve(call.seq, call.name, call.input)
        if served is None:
            if self.recording.missing is None:  # of calls made at once, the first in order is told
                self.recording.missing = EvalToolCall(name=call.name, arguments=call.input)
            raise NotInRecording
        op = served.op
        if op.status is OpStatus.FAILED:
            raise OperationFailed(op.name, call.seq, op.error_type or "", op.error or "", attempts=op.attempt)
        return served.output
