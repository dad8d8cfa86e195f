"""The cost of each live model call, priced once and journaled with its answer.

The figure goes in the answer's usage (``usage.cost``, US dollars), which the
journal keeps in the operation's output and meta: a replayed call reuses it
and is never priced again, so a price table upgraded between two runs does not
change what a task spent. A call no table prices is priced as the model the
command was told to price such calls as (``--priced-as``, `priced_as_default`),
else keeps ``cost`` None, and the task says so once per model (a
``model_unpriced`` warning event, committed with the call's record): for a
server no table knows (a gateway), naming its URL and the ``priced_as`` that
would price it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...pricing import cost_of, priced_as_default, priced_model, unpriced_message
from ...records import Event, Severity
from .call import Call

if TYPE_CHECKING:  # the providers are imported when a task first calls its model
    from ...providers import ModelProvider, ModelResponse

__all__ = ["UNPRICED_META", "priced_answer"]

# The operation's meta key naming the model an unpriced call was made with (to warn once per model).
UNPRICED_META = "unpriced"


def priced_answer(call: Call, model: ModelProvider, response: ModelResponse) -> ModelResponse:
    """`response` with its cost: as the provider reported it, else from the price table.

    Stages one warning event on `call` the first time the task makes an
    unpriced call to this model.
    """
    usage = response.usage
    if usage.cost is not None:
        return response
    provider, name, api_url = priced_model(model)
    cost = cost_of(provider, name, usage, api_url=api_url)
    fallback = priced_as_default()
    if cost is None and fallback is not None:
        fallback_provider, _, fallback_name = fallback.partition(":")
        cost = cost_of(fallback_provider, fallback_name, usage)
    if cost is not None:
        return response.model_copy(update={"usage": usage.model_copy(update={"cost": cost})})
    spec = f"{provider}:{name}"
    call.meta[UNPRICED_META] = spec
    if call.context.budget.first_unpriced(spec):
        message = unpriced_message(provider, name, api_url=api_url)
        if call.context.task.budget.max_cost is not None:
            message += " toward max_cost"
        call.stage_event(
            Event(
                task_id=call.task_id,
                kind="model_unpriced",
                severity=Severity.WARNING,
                message=message,
                data={"model": spec, "seq": call.seq},
            )
        )
    return response
