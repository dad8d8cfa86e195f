"""The `Runtime`'s writes to tasks on behalf of agents: state patches from outside, notes, handoffs, grants.

`SharingMethods` is part of `Runtime`. Each method takes ``as_agent``: the
agent it acts for, whose right to write the task is checked in the same
transaction (trust/scope.py; docs/mcp.md, "Who may write"); None acts for a person
or the program itself, who may write any task.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..agent.acting import NOTE
from ..engine.outside_writes import grant_task, hand_off, patch_from_outside
from ..errors import InputError
from ..records import InboxMessage, StatePatch, Task, TaskGrant
from ..store import StateStore
from ..trust.scope import check_may_write

__all__ = ["SharingMethods"]

MAX_NOTE_CHARS = 20_000  # a note is read by a model at its next turn: a page, not a file


class _Host(Protocol):
    @property
    def store(self) -> StateStore: ...

    async def send(self, task_id: str, name: str, payload: Any = None) -> InboxMessage: ...


class SharingMethods:
    """``Runtime.patch_state``, ``note``, ``handoff``, ``grant`` and ``grants``."""

    async def patch_state(
        self: _Host, task_id: str, patch: StatePatch | dict[str, Any], *, as_agent: str | None = None
    ) -> Task:
        """Change a task's state (its AgentState) from outside its run; returns the task as stored.

        The patch is applied to the stored state at once, in one transaction
        with a ``state_patched`` event, and queued for the task's run, which
        takes it as a journaled step before its own next patch (an agent: at
        its next act turn, where it is told of it): a resume or a replay keeps
        it, and a running worker's later writes do not undo it
        (docs/durability.md, "Patches from outside a run").

        Raises:
            InputError: the patch is not a StatePatch or does not apply, or
                the task already ended; nothing is written.
            WriteRefused: `as_agent` may not write the task.
            TaskNotFound: no task has that id.
        """
        return await patch_from_outside(self.store, task_id, patch, by=as_agent)

    async def note(self: _Host, task_id: str, text: str, *, as_agent: str | None = None) -> InboxMessage:
        """Send a note to a task: an agent reads it at its next act turn (``ratchet send TASK note``).

        Raises:
            InputError: the note is empty or too long, or the task already ended.
            WriteRefused: `as_agent` may not write the task.
            TaskNotFound: no task has that id.
        """
        if not isinstance(text, str) or not text.strip():
            raise InputError("a note needs text: what the agent should know")
        if len(text) > MAX_NOTE_CHARS:
            raise InputError(f"a note is at most {MAX_NOTE_CHARS} characters; this one has {len(text)}")
        if as_agent is not None:
            async with self.store.reading() as tx:
                await check_may_write(tx, task_id, as_agent, "send it a note")
        return await self.send(task_id, NOTE, text)

    async def handoff(
        self: _Host, task_id: str, to_agent: str, *, note: str = "", as_agent: str | None = None
    ) -> Task:
        """Give a task to agent `to_agent` (``Task.agent``): it owns it, and writes it, from now on.

        Evented (``handed_off``, with from, to and the note). The note, if
        any, reaches the task as a note (`note`) in the same transaction. The
        task's code, sessions, children and journal are untouched: a resume
        runs the same agent spec it recorded.

        Raises:
            InputError: `to_agent` is not an agent id or owns the task already, or the task ended.
            WriteRefused: `as_agent` does not own the task.
            TaskNotFound: no task has that id.
        """
        return await hand_off(self.store, task_id, to_agent, note=note, note_name=NOTE, by=as_agent)

    async def grant(self: _Host, task_id: str, agent: str, *, as_agent: str | None = None) -> bool:
        """Let `agent` write a task without giving it away; True if new, False if it had leave already.

        Raises:
            InputError: `agent` is not an agent id or owns the task, or the task ended.
            WriteRefused: `as_agent` does not own the task.
            TaskNotFound: no task has that id.
        """
        return await grant_task(self.store, task_id, agent, by=as_agent)

    async def grants(self: _Host, task_id: str) -> list[TaskGrant]:
        """The agents a task was granted to, oldest grant first."""
        return await self.store.list_grants(task_id)
