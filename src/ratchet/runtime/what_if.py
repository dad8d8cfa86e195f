"""What a what-if fork changes: its model, its instructions, inputs, and tool results it replays.

A fork (`ratchet.runtime.fork`) copies a task's journal up to a point into a
new task. Its overrides change what the new task starts from, each checked
before anything is stored (one `InputError` otherwise):

- ``model``: the task's ``model`` field. The kept journal replays as it was
  recorded (a replay never asks a model); every model call after the fork
  point goes to this model, and to it alone: the original's fallback chain
  is dropped. The field is sealed, so the new task is sealed again over it
  (`SigningKey.reseal`), with this process's key.
- ``instructions``: for a planning agent's task, the agent's instructions
  (``AgentSpec.instructions``, the system prompt of each plan and act call);
  for a workflow's task, the task's ``instruction``, which its code reads as
  ``ctx.task.instruction``. Like the model, they change the calls made live,
  not the recorded ones. (An agent's task ``instruction``, the request it
  planned from, is left: the plan it made replays from the journal.) The
  agent's spec is sealed, so, as for the model, the new task is sealed
  again over it; only its instructions change, never the code it names.
- ``inputs``: inputs to change (the others stay); never one the task reads
  code from, which its seal covers.
- ``tool_results``: a result for a journaled tool call the fork keeps. The
  copied operation holds the new output, succeeded, and its ``meta`` says
  ``{"overridden": {"from": <the recorded output>}}`` (with the recorded
  ``status`` and ``error`` too, when it had failed, and the reference of a
  large result kept as an artifact as ``artifact``): what the workflow
  reads on replay, and what a reader of the fork's journal sees.

The ``task_forked`` event on the new task carries the same, under
``data["overrides"]`` (`WhatIf.describe`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import JsonValue

from ..agent import AGENT_WORKFLOW
from ..engine.journal.large_results import RESULT_ARTIFACT
from ..engine.task_spec import model_chain
from ..errors import InputError
from ..limits import MAX_INSTRUCTION_BYTES, check_instruction, check_text
from ..printable import printable_json
from ..providers.scripted import portable_model
from ..records import Operation, OpKind, OpStatus, Task, utcnow
from ..trust.seal import covered_inputs

__all__ = ["OVERRIDDEN", "WhatIf"]

OVERRIDDEN = "overridden"
"""The key of an operation's ``meta`` that says a fork gave it another result."""

# How much of a value the fork's event message quotes; the event's data holds it whole.
_QUOTED_CHARS = 60


@dataclass(frozen=True)
class WhatIf:
    """The overrides of one fork (each None, or empty, when not given).

    Attributes:
        model: the model every live call of the fork uses (``provider:name``).
        instructions: the agent's instructions (a workflow's task: its instruction) in the fork.
        inputs: inputs changed in the fork.
        tool_results: a new result per seq of a journaled tool call the fork keeps.
    """

    model: str | None = None
    instructions: str | None = None
    inputs: Mapping[str, JsonValue] = field(default_factory=dict)
    tool_results: Mapping[int, JsonValue] = field(default_factory=dict)

    def task_changes(
        self, original: Task, *, max_instruction_bytes: int = MAX_INSTRUCTION_BYTES
    ) -> dict[str, object]:
        """The fields of the new task that differ from `original`'s, checked.

        Raises:
            InputError: the model is not ``provider:name``; the instructions are
                too large or not text; an input is one the task reads code from.
        """
        changes: dict[str, object] = {}
        if self.model is not None:
            models = model_chain(self.model)
            if not models:
                raise InputError("give the fork's model as provider:name, e.g. openai:gpt-4o-mini")
            changes["model"] = portable_model(models[0])
            # The fork names this model alone: a replayed call that had fallen back down the
            # original's chain would lead the live calls back down it (FallbackChain.follow).
            changes["fallback_models"] = []
            changes["fallback_on_pressure"] = False
        inputs = dict(original.inputs_params)
        if self.instructions is not None:
            check_instruction(self.instructions, limit=max_instruction_bytes)
            check_text(self.instructions, "the instructions")
            spec = inputs.get("agent")
            if original.workflow == AGENT_WORKFLOW and isinstance(spec, dict):
                inputs["agent"] = {**spec, "instructions": self.instructions}
            else:
                changes["instruction"] = self.instructions
        if self.inputs:
            sealed = covered_inputs(original)
            for key in sorted(self.inputs):
                if key in sealed:
                    raise InputError(
                        f"input {key!r} names the code task {original.id} runs; a fork can change its other "
                        "inputs, not that one"
                    )
            inputs.update(self.inputs)
        if inputs != original.inputs_params:
            changes["inputs_params"] = inputs
        return changes

    def override_ops(self, task_id: str, ops: Sequence[Operation], last_seq: int) -> list[Operation]:
        """`ops` (the journal the fork keeps, up to `last_seq`) with the tool results overridden.

        Raises:
            InputError: a seq is not that of a tool call among `ops`.
        """
        kept = {op.seq: op for op in ops}
        for seq in sorted(self.tool_results):
            op = kept.get(seq)
            if op is None:
                kept_range = f"operations 0 to {last_seq} are kept" if last_seq >= 0 else "none is kept"
                raise InputError(
                    f"tool result {seq}: task {task_id} has no operation {seq} before the fork point "
                    f"({kept_range}); `ratchet journal {task_id}` lists its calls"
                )
            if op.kind is not OpKind.TOOL:
                raise InputError(
                    f"tool result {seq}: operation {seq} of task {task_id} is a {op.kind} call "
                    f"({op.name}), not a tool call; `ratchet journal {task_id}` lists its calls"
                )
        return [self._overridden(op) if op.seq in self.tool_results else op for op in ops]

    def _overridden(self, op: Operation) -> Operation:
        meta = dict(op.meta)
        was: dict[str, JsonValue] = {"from": op.output}
        if op.status is not OpStatus.SUCCEEDED:
            was["status"] = str(op.status)
        if op.error is not None:
            was["error"] = op.error
        # A large result was kept as an artifact, which replay would read back instead of the output.
        set_aside = meta.pop(RESULT_ARTIFACT, None)
        if set_aside is not None:
            was["artifact"] = set_aside
        return op.model_copy(
            update={
                "status": OpStatus.SUCCEEDED,
                "output": self.tool_results[op.seq],
                "error": None,
                "error_type": None,
                "next_attempt_at": None,
                "finished_at": op.finished_at or utcnow(),
                "meta": {**meta, OVERRIDDEN: was},
            }
        )

    def describe(
        self, original: Task, forked: Task, ops: Sequence[Operation]
    ) -> tuple[dict[str, JsonValue], list[str]]:
        """What the fork changed: the ``overrides`` of its event's data, and the clauses of its message.

        `ops` are the operations as the fork keeps them (overridden already).
        """
        data: dict[str, JsonValue] = {}
        said: list[str] = []
        if self.model is not None:
            model: dict[str, JsonValue] = {"from": original.model, "to": forked.model}
            if original.fallback_models:
                model["dropped_fallbacks"] = list(original.fallback_models)
            data["model"] = model
            said.append(f"the model {forked.model} (was {original.model or 'none'})")
        if self.instructions is not None:
            was, now = _instructions(original), _instructions(forked)
            data["instructions"] = {"from": was, "to": now}
            said.append(f"the instructions {_quoted(now)}")
        if self.inputs:
            data["inputs"] = {
                key: {"from": original.inputs_params.get(key), "to": forked.inputs_params[key]}
                for key in sorted(self.inputs)
            }
        results: list[JsonValue] = []
        for op in ops:
            recorded = op.meta.get(OVERRIDDEN)
            if op.seq in self.tool_results and isinstance(recorded, dict):
                results.append({"seq": op.seq, "name": op.name, **recorded, "to": op.output})
                said.append(f"the result of operation {op.seq} ({op.name}) set to {_quoted(op.output)}")
        if results:
            data["tool_results"] = results
        return data, said


def _instructions(task: Task) -> str:
    """What ``instructions`` changes in `task`: its agent's instructions, or its own instruction."""
    spec = task.inputs_params.get("agent")
    if task.workflow == AGENT_WORKFLOW and isinstance(spec, dict):
        return str(spec.get("instructions", ""))
    return task.instruction


def _quoted(value: JsonValue) -> str:
    text = value if isinstance(value, str) else printable_json(value)
    text = " ".join(str(text).split())
    return repr(text if len(text) <= _QUOTED_CHARS else text[: _QUOTED_CHARS - 3] + "...")
