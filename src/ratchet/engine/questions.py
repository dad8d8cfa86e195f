"""A question for a person (``ctx.ask_user``): a journal operation the task waits on.

The question is an operation of kind ``question``, recorded ``started`` when
asked; ``ratchet answer`` records its answer. A resume before the answer
waits again; one after it returns the recorded answer (engine/people.py).
"""

from __future__ import annotations

from typing import Any, NoReturn, Protocol

from pydantic import JsonValue

from ..errors import NonDeterminismError
from ..records import AgentState, Operation, OpKind, OpStatus, WaitReason
from .calls import step_meta
from .journal.values import JournalHost

__all__ = ["ask_person"]


class _Asker(JournalHost, Protocol):
    state: AgentState

    async def apply_patch(self, patch: Any) -> AgentState: ...

    async def suspend(
        self, reason: WaitReason, message: str, *, data: dict[str, JsonValue] | None = None
    ) -> NoReturn: ...


async def ask_person(ctx: _Asker, seq: int, question: str) -> str:
    """Ask `question` at journal position `seq` (already in the open questions); return the answer.

    The task waits (``waiting(input)``, unwinding with `TaskSuspended`) until
    the answer is recorded; the question is then resolved in the state.
    """
    asked = ctx.journal.lookup(seq)
    if asked is not None and asked.kind is not OpKind.QUESTION:
        raise NonDeterminismError(ctx.task_id, seq, f"{asked.kind} {asked.name}", "question ask_user")
    if asked is None:
        asked = Operation(
            task_id=ctx.task_id,
            seq=seq,
            kind=OpKind.QUESTION,
            name="ask_user",
            idempotency_key=f"{ctx.task_id}:{seq}",
            status=OpStatus.STARTED,
            input={"question": question},
            meta=step_meta(ctx.current_step),
        )
        await ctx.store.record_op_started(asked, fence=ctx.lease)
        ctx.journal.recorded[seq] = asked
    if asked.status is not OpStatus.SUCCEEDED:
        await ctx.suspend(
            WaitReason.INPUT,
            f"a question for a person: {question} (answer it with `ratchet answer {ctx.task_id} TEXT`)",
            data={"seq": seq, "question": question},
        )
    answer = str(asked.output)
    if question in ctx.state.open_questions:
        await ctx.apply_patch({"ops": [{"op": "resolve_question", "question": question, "answer": answer}]})
    return answer
