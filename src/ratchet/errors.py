"""Every error Ratchet raises on purpose.

Each error's docstring is its default message. The tree::

    RatchetError                     root of every Ratchet error
    ├── InputError                   bad input a person can fix (CLI exit code 2)
    │   ├── StoreURLError            a store URL that names no usable store
    │   ├── MissingExtra             a model or store whose library (an extra) is not installed
    │   ├── TaskNotFound             no task with that id
    │   ├── StepNotFound             the task has no step with that index
    │   ├── SessionNotFound          no session with that id
    │   ├── ArtifactNotFound         no artifact with that id
    │   ├── CheckpointNotFound       no checkpoint with that number
    │   ├── CodeUnavailable          a task's code or workspace can't be used here (it waits)
    │   │   ├── WorkflowNotFound     a task's workflow or tool code is missing or does not load
    │   │   │   └── StartsWhenLoaded a module loaded for a task's code starts tasks (no __main__ guard)
    │   │   ├── CodeRefused          the code lies outside what this process may import
    │   │   │   └── CodeUnsealed     the task's code references do not hold their seal
    │   │   ├── ScriptNotFound       the scripted model's script file is missing here
    │   │   └── WorkspaceRefused     the task's workspace lies outside the workspace root
    │   ├── InvalidInputs            inputs that do not fit the workflow's parameters
    │   ├── CannotResume             the task can't be resumed now (held, ended, stale)
    │   ├── AlreadyDecided           the call was decided already; the task has not run it yet
    │   ├── WriteRefused             an agent may not write a task it neither owns nor was granted
    │   ├── CannotRetry              the task can't be retried (not ended, completed, no such step)
    │   └── CannotDelete             the task can't be deleted (not ended, leased, has children)
    ├── InvalidTransition            a status change the status machine forbids
    ├── StatePatchError              a StatePatch that cannot apply to the state
    ├── NonDeterminismError          a resumed workflow asked for a different call than it journaled
    ├── OperationFailed              a journaled call failed for good (after its retries)
    ├── InvalidModelOutput           a model's answer did not fit the schema asked for, after its repairs
    ├── InvalidResult                a task's result does not fit the type it is read as
    ├── TaskNotCompleted             a task whose result was asked for has not completed
    ├── TurnNotCompleted             a `Runtime.chat` turn's task did not complete
    ├── AgentRunNotCompleted         a `RatchetAgent` run's task did not complete (pydantic-ai)
    ├── ReceiveTimeout               ``ctx.receive`` timed out with no message (also a TimeoutError)
    ├── NonRetryableError            raised by a tool: fail now, do not retry
    │   ├── ApprovalDenied           a person denied the call (or its approval timed out)
    │   └── MCPToolError             an MCP server's tool answered with an error (isError)
    ├── MCPServerUnreachable         an MCP server could not be started or reached (retried)
    ├── TaskStopped                  the task ended in failure for a stated limit
    │   ├── BudgetExceeded           a budget limit was reached
    │   └── DeadlineExceeded         the task's deadline, a step or tool timeout passed
    └── StoreError                   the store cannot do what was asked
        ├── StoreUnavailable         the store cannot be used now (unreachable, I/O error, locked)
        │   ├── StoreFull            no space left: the database or its disk is full
        │   │   └── WorkspaceFull    no space left on the disk of a task's workspace
        │   └── StoreReadOnly        the database cannot be written (read-only file, file system, server)
        ├── StoreNotFound            the database does not exist (and was not to be created)
        ├── NotARatchetDatabase      the file is not a database Ratchet wrote
        ├── SchemaTooNew             written by a newer Ratchet than this one
        ├── DamagedDatabase          fails its integrity check, or its schema version is unreadable
        ├── CorruptRecord            a stored row that does not decode into its record
        ├── DuplicateRecord          a record with that key already exists
        └── ConflictError            a concurrent writer changed the record first

    LeaseLost (BaseException)        this worker no longer holds the task's lease
    Interrupted (SystemExit)         a Ctrl-C ends the `ratchet` program outside its event loop

`LeaseLost` derives from `BaseException` so that an ``except Exception`` in a
tool or a workflow cannot swallow it: a worker that lost its lease must stop
writing for that task at once (fencing). `Interrupted` is a `SystemExit`
for the same reason, and has a name of its own so that code which loads a
module and reports the module's own ``sys.exit()`` lets a Ctrl-C through.
"""

from __future__ import annotations

from typing import Any

from ._distribution import DISTRIBUTION

__all__ = [
    "AgentRunNotCompleted",
    "AlreadyDecided",
    "ApprovalDenied",
    "ArtifactNotFound",
    "BudgetExceeded",
    "CannotDelete",
    "CannotResume",
    "CannotRetry",
    "CheckpointNotFound",
    "CodeRefused",
    "CodeUnavailable",
    "CodeUnsealed",
    "ConflictError",
    "CorruptRecord",
    "DamagedDatabase",
    "DeadlineExceeded",
    "DuplicateRecord",
    "InputError",
    "Interrupted",
    "InvalidInputs",
    "InvalidModelOutput",
    "InvalidResult",
    "InvalidTransition",
    "LeaseLost",
    "MCPServerUnreachable",
    "MCPToolError",
    "MissingExtra",
    "NonDeterminismError",
    "NonRetryableError",
    "NotARatchetDatabase",
    "OperationFailed",
    "RatchetError",
    "ReceiveTimeout",
    "SchemaTooNew",
    "ScriptNotFound",
    "SessionNotFound",
    "StartsWhenLoaded",
    "StatePatchError",
    "StepNotFound",
    "StoreError",
    "StoreFull",
    "StoreNotFound",
    "StoreReadOnly",
    "StoreURLError",
    "StoreUnavailable",
    "TaskNotCompleted",
    "TaskNotFound",
    "TaskStopped",
    "TurnNotCompleted",
    "WorkflowNotFound",
    "WorkspaceFull",
    "WorkspaceRefused",
    "WriteRefused",
]


def _default_message(cls: type) -> str:
    return (cls.__doc__ or cls.__name__).strip().splitlines()[0]


class RatchetError(Exception):
    """Ratchet could not do what was asked."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or _default_message(type(self)))

    @property
    def message(self) -> str:
        return str(self.args[0])


class InputError(RatchetError):
    """The input is not valid."""


class StoreURLError(InputError):
    """The store URL is not valid; use memory://, sqlite:///PATH or postgresql://..."""


class MissingExtra(InputError):
    """That needs a library that is not installed: install Ratchet with the extra that brings it.

    Args:
        feature: what was asked for, as the user wrote it ("the anthropic: provider").
        library: what it needs ("the Anthropic SDK").
        extra: the extra of Ratchet's distribution that installs it ("anthropic").
    """

    def __init__(self, feature: str, library: str, extra: str) -> None:
        super().__init__(f"{feature} needs {library}: pip install '{DISTRIBUTION}[{extra}]'")
        self.feature = feature
        self.library = library
        self.extra = extra


class TaskNotFound(InputError):
    """No task has that id; `ratchet tasks` lists the known ones."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"no task with id {task_id!r}; `ratchet tasks` lists the known ones")
        self.task_id = task_id


class StepNotFound(InputError):
    """The task has no step with that index."""

    def __init__(self, task_id: str, index: int) -> None:
        super().__init__(f"task {task_id!r} has no step {index}")
        self.task_id = task_id
        self.index = index


class SessionNotFound(InputError):
    """No session has that id; `ratchet sessions` lists the known ones."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}")
        self.session_id = session_id


class ArtifactNotFound(InputError):
    """No artifact has that id."""

    def __init__(self, artifact_id: str) -> None:
        super().__init__(f"no artifact with id {artifact_id!r}")
        self.artifact_id = artifact_id


class CheckpointNotFound(InputError):
    """No checkpoint has that number for the task."""


class CodeUnavailable(InputError):
    """The task's code or workspace cannot be used here; the task waits for it (``waiting(code)``)."""


class WorkflowNotFound(CodeUnavailable):
    """The task's workflow cannot be found; import its module where the worker runs."""


class StartsWhenLoaded(WorkflowNotFound):
    """A module loaded for a task's code starts tasks itself; put its entry point under the __main__ guard."""


class CodeRefused(CodeUnavailable):
    """The code lies outside the project root and installed packages; admit it with --allow-code."""


class CodeUnsealed(CodeRefused):
    """The task's code references carry no seal this process's key made; check them, then reseal."""


class ScriptNotFound(CodeUnavailable):
    """The scripted model's script file is missing here; put it back where the task looks for it."""


class WorkspaceRefused(CodeUnavailable):
    """The task's workspace lies outside the workspace root ($RATCHET_HOME/workspaces)."""


class InvalidInputs(InputError):
    """The inputs do not fit the workflow's parameters; nothing was stored."""


class CannotResume(InputError):
    """The task cannot be resumed now."""


class AlreadyDecided(InputError):
    """That call was decided already, and the task has not run it yet; nothing more was decided."""


class WriteRefused(InputError):
    """This agent may not write that task: it neither owns it nor was granted it."""


class CannotRetry(InputError):
    """The task cannot be retried: only a failed or cancelled task can, from a step it reached."""


class CannotDelete(InputError):
    """The task cannot be deleted: only an ended task no worker holds, with no child tasks, can."""


class InvalidTransition(RatchetError):
    """That status change is not allowed."""


class StatePatchError(RatchetError):
    """The state patch does not apply to the current state."""


class NonDeterminismError(RatchetError):
    """The resumed workflow asked for a different call than the journal recorded at that point."""

    def __init__(self, task_id: str, seq: int, recorded: str, requested: str) -> None:
        super().__init__(
            f"task {task_id}: operation {seq} was journaled as {recorded!r} but the workflow "
            f"now asks for {requested!r}; the workflow code changed or is not deterministic. "
            f"To change code while tasks run, keep the old calls and put the new ones under "
            f'`if await ctx.patched("<change-id>"):` (docs/durability.md, "Changing workflow code")'
        )
        self.task_id = task_id
        self.seq = seq
        self.recorded = recorded
        self.requested = requested


class OperationFailed(RatchetError):
    """A journaled call failed for good.

    ``attempts`` is how many times it was tried: more than one means its retry
    policy tried it again, so it failed for want of an answer (an outage), not
    for the answer it got.
    """

    def __init__(self, name: str, seq: int, error_type: str, error: str, *, attempts: int = 1) -> None:
        super().__init__(f"{name} (operation {seq}) failed: {error_type}: {error}")
        self.name = name
        self.seq = seq
        self.error_type = error_type
        self.error = error
        self.attempts = attempts


class InvalidModelOutput(RatchetError):
    """The model's answer did not fit the schema asked for, after its repairs."""


class InvalidResult(RatchetError):
    """The task's result does not fit the type it is read as."""


class TaskNotCompleted(RatchetError):
    """The task has not completed, so it has no result: it failed, was cancelled, or has not ended.

    Raised by `Runtime.result`; ``task`` is the task as it stands
    (``task.status``, ``task.error``), or None.
    """

    def __init__(self, message: str | None = None, *, task: Any = None) -> None:
        if message is None and task is not None:
            why = f": {task.error}" if task.error else ""
            message = f"task {task.id} is {task.status_text}{why}; only a completed task has a result"
        super().__init__(message)
        self.task = task


class TurnNotCompleted(RatchetError):
    """The turn's task did not complete: it failed, was cancelled, or waits on a person.

    Raised by `Runtime.chat`; ``task`` is the turn's task as it stands
    (``task.status``, ``task.error``), or None.
    """

    def __init__(self, message: str | None = None, *, task: Any = None) -> None:
        if message is None and task is not None:
            why = f": {task.error}" if task.error else ""
            shown = f"`ratchet show {task.id}` tells more"
            message = f"the turn's task {task.id} is {task.status_text}{why} ({shown})"
        super().__init__(message)
        self.task = task


class AgentRunNotCompleted(RatchetError):
    """The agent run's task did not complete: it failed, was cancelled, or waits (on a person, say).

    Raised by ``RatchetAgent.run`` outside a workflow; ``task`` is the run's
    task as it stands (``task.status``, ``task.error``, ``task.result``).
    """

    def __init__(self, message: str | None = None, *, task: Any = None) -> None:
        if message is None and task is not None:
            why = f": {task.error}" if task.error else ""
            message = f"the agent run's task {task.id} is {task.status_text}{why}"
            if task.waiting_on is not None:
                message += f"; once settled, run it again with task_id={task.id!r} or `ratchet resume`"
        super().__init__(message)
        self.task = task


class ReceiveTimeout(RatchetError, TimeoutError):
    """No message came before the receive's timeout.

    Also a `TimeoutError`, so ``except TimeoutError`` catches it as it
    catches ``asyncio.timeout``'s.
    """


class NonRetryableError(RatchetError):
    """The call failed in a way that trying again cannot fix."""


class ApprovalDenied(NonRetryableError):
    """A person denied the call; it did not run."""


class MCPToolError(NonRetryableError):
    """An MCP server's tool answered with an error; the model hears it, as it hears a tool raising."""


class MCPServerUnreachable(RatchetError):
    """An MCP server could not be started or reached; the call is retried under its retry policy."""


class TaskStopped(RatchetError):
    """The task was stopped by one of its limits."""


class BudgetExceeded(TaskStopped):
    """The task used up its budget."""


class DeadlineExceeded(TaskStopped):
    """The task ran past its deadline."""


class StoreError(RatchetError):
    """The store could not complete the operation."""


class StoreUnavailable(StoreError):
    """The store cannot be used now; what was asked may work once the store is fixed.

    Nothing is lost: a write that met it was rolled back whole. A task that
    met it stays resumable (`ratchet resume ID` once the store is back).
    """


class StoreFull(StoreUnavailable):
    """The database or its disk is full; free space and try again."""


class WorkspaceFull(StoreFull):
    """The disk under the task's workspace is full; free space there and try again.

    A task's files are kept as its records are: a full disk under its
    workspace stops it as a full disk under its store does, resumable, never
    failed (``store_failed``; `ratchet run` and `ratchet resume` exit 5).
    """


class StoreReadOnly(StoreUnavailable):
    """The database is read-only; make it writable and try again."""


class StoreNotFound(StoreError):
    """The database does not exist."""


class NotARatchetDatabase(StoreError):
    """The file is not a Ratchet database."""


class SchemaTooNew(StoreError):
    """The database was written by a newer version of Ratchet; upgrade Ratchet to open it."""

    def __init__(self, found: int, supported: int) -> None:
        super().__init__(
            f"the database has schema version {found} but this Ratchet supports up to "
            f"version {supported}; upgrade Ratchet to open it"
        )
        self.found = found
        self.supported = supported


class DamagedDatabase(StoreError):
    """The database is damaged; back it up and repair it (docs/stores.md says how)."""


class CorruptRecord(StoreError):
    """A stored row cannot be read as the record it holds; fix or delete the row.

    Args:
        what: the record, as people name it ("task t1", "event 4 of task t1").
        table: the table its row is in.
        key: the row's key in that table (a task's id; a task's id and a number).
        problem: what is wrong, on one line.
    """

    def __init__(self, what: str, table: str, key: tuple[str | int, ...], problem: str) -> None:
        super().__init__(f"{what} is unreadable: {problem}")
        self.what = what
        self.table = table
        self.key = key
        self.problem = problem


class DuplicateRecord(StoreError):
    """A record with that key already exists."""


class ConflictError(StoreError):
    """Another writer changed the record first; read it again and retry."""


class LeaseLost(BaseException):
    """This worker no longer holds the lease on the task; another worker owns it now."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or _default_message(type(self)))

    @property
    def message(self) -> str:
        return str(self.args[0])


class Interrupted(SystemExit):
    """A Ctrl-C ends the `ratchet` program here, with the exit code `code` (130, or 0 for a worker).

    Raised by the program's SIGINT handler outside an event loop: as a
    `SystemExit` it prints nothing and passes every ``except Exception``; a
    loader that reports a module's ``sys.exit()`` lets this one through, as it
    does a KeyboardInterrupt.
    """
