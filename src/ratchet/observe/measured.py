"""`MeasuredCall`, one live call that ended as every recorder of metrics receives it; their buckets."""

from __future__ import annotations

from dataclasses import dataclass

from ..records import OpKind
from .spans import ObservedCall, served_by

__all__ = ["CALL_BUCKETS", "TASK_BUCKETS", "MeasuredCall"]

# A live call, in seconds: a local tool in milliseconds, a model's answer in seconds to minutes
# (a long generation, a reasoning model, retries with their backoff), a slow tool up to ten minutes.
CALL_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
# A task, from its first start to its end: seconds to a day (a person's approval may be in it).
TASK_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0, 21600.0, 86400.0)


@dataclass(frozen=True, slots=True)
class MeasuredCall:
    """One live call that ended, as the metrics label and measure it.

    Every label comes from code or configuration, never from a task: the
    agent's (or workflow's) name, the ``provider:name`` of a model, the name
    of a registered tool.
    """

    kind: str
    outcome: str
    seconds: float
    agent: str
    model: str | None = None
    tool: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0  # US dollars, when the call was priced
    error_type: str | None = None  # the type of the error it failed with (a class name)
    protocol: str | None = None  # the protocol a model call spoke (`openai` for an endpoint `gpu:`)

    @classmethod
    def of(cls, call: ObservedCall, outcome: str, seconds: float, error: str | None = None) -> MeasuredCall:
        """What `call` reports, ended with `outcome` after `seconds` (its usage read from its meta).

        `error` is the span's ``Type: message`` of a call that failed or was stopped.
        """
        task = call.context.task
        error_type = error.split(":", 1)[0] if error else None
        if call.kind is not OpKind.MODEL:
            tool = call.tool.name if call.tool is not None else None
            return cls(str(call.kind), outcome, seconds, task.agent, tool=tool, error_type=error_type)
        usage = call.meta.get("usage")
        tokens_in = tokens_out = 0
        cost = 0.0
        if isinstance(usage, dict):
            tokens_in, tokens_out = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
            priced = usage.get("cost")
            cost = float(priced) if isinstance(priced, (int, float)) and priced > 0 else 0.0
        model = call.model or task.model or "unknown:unknown"
        protocol = served_by(call)[1]
        return cls(
            str(call.kind),
            outcome,
            seconds,
            task.agent,
            model,
            None,
            tokens_in,
            tokens_out,
            cost,
            error_type,
            protocol,
        )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
