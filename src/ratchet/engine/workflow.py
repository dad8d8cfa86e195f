"""Workflows: async functions that run inside a durable context.

``@ratchet.workflow`` marks ``async def fn(ctx, **inputs)``. A task records the
workflow by reference, ``"package.module:function"`` or ``"file.py:function"``
(a path relative to the project root, or absolute outside it), so any worker
with the same code can load it and resume the task; no registry is involved.
While a run enforces a `CodeTrust`, only code it admits is loaded. Its inputs
and result are typed by its function's signature (`signature.py`).

Two kinds of code are not imported: the script a process runs (``python
app.py``) resolves to its live ``__main__`` there (`ratchet.engine.scripts`),
and a workflow defined in a notebook cell or at a REPL is named
``<interactive ...>:function`` and found only in the process that defined it
(`ratchet.engine.interactive`).
"""

from __future__ import annotations

import copy
import functools
import importlib
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, overload

from ..errors import Interrupted, WorkflowNotFound
from ..policy import CheckpointPolicy, RetryPolicy
from ..tools import Tool
from ..trust.code import (
    FILE_MODULE_PREFIX,
    CodeTrust,
    enforced_trust,
    file_module_name,
    portable_path,
    project_path,
    refuse_unloadable,
)
from .interactive import INTERACTIVE, defined_interactively, find_interactive, interactive_source, remember
from .scripts import loading, running_script, starts_when_loaded
from .signature import WorkflowSignature

__all__ = ["Workflow", "load_module", "load_workflow", "portable_reference", "workflow"]


class Workflow:
    """A workflow function with the tools it may call and its policies."""

    def __init__(
        self,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        tools: Iterable[Tool] = (),
        retry: RetryPolicy | None = None,
        checkpoint: CheckpointPolicy | None = None,
        middleware: Iterable[Any] = (),
        tools_for: Callable[[Any, Any], Iterable[Tool]] | None = None,
        middleware_for: Callable[[Any], Iterable[Any]] | None = None,
        checkpoint_for: Callable[[Any], CheckpointPolicy | None] | None = None,
        code_inputs: Iterable[str] = (),
    ) -> None:
        self.fn = fn
        # The inputs this workflow loads code from (an agent's spec): a task's seal covers them.
        self.code_inputs = tuple(code_inputs)
        self.middleware = list(middleware)
        self._tools_for = tools_for
        self._middleware_for = middleware_for
        self._checkpoint_for = checkpoint_for
        self.name = name or fn.__name__
        self.tools = {t.name: t for t in tools}
        self.retry = retry or RetryPolicy()
        self.checkpoint = checkpoint or CheckpointPolicy()
        if defined_interactively(fn):  # a cell run again replaces the workflow its tasks resume with
            remember(self.reference, self)

    def __repr__(self) -> str:
        return f"<Workflow {self.reference}>"

    @functools.cached_property
    def signature(self) -> WorkflowSignature:
        """Its inputs and result as its function's signature types them (built once, when first needed)."""
        return WorkflowSignature(self.fn, self.name)

    def tools_for(self, task: Any, store: Any) -> list[Tool]:
        """The tools a task of this workflow may call beyond the fixed ones (e.g. an agent's)."""
        return list(self._tools_for(task, store)) if self._tools_for is not None else []

    def middleware_for(self, task: Any) -> list[Any]:
        """The middleware a task of this workflow gets from its own inputs (an agent's compaction),
        outside the fixed ones."""
        return list(self._middleware_for(task)) if self._middleware_for is not None else []

    def checkpoint_for(self, task: Any) -> CheckpointPolicy:
        """The checkpoint policy a task of this workflow runs under: its own, if it records one
        (an agent's, ``Agent(checkpoint=...)``), else the workflow's."""
        own = self._checkpoint_for(task) if self._checkpoint_for is not None else None
        return own or self.checkpoint

    def for_task(self, task: Any) -> Workflow:
        """This workflow as `task` runs it: with the task's own checkpoint policy, if it has one."""
        policy = self.checkpoint_for(task)
        if policy == self.checkpoint:
            return self
        adapted = copy.copy(self)
        adapted.checkpoint = policy
        return adapted

    @property
    def reference(self) -> str:
        """Where a worker finds this workflow: ``module:qualname``, else ``file.py:qualname``.

        A file under the project root (the current directory) is named by its
        path relative to it, so the task survives moving the project. One
        defined in a notebook cell or at a REPL is ``<interactive ...>:qualname``.
        """
        qualname = self.fn.__qualname__
        if defined_interactively(self.fn):
            return f"{interactive_source(self.fn)}:{qualname}"
        module = sys.modules.get(self.fn.__module__)
        path = getattr(module, "__file__", None)
        if (
            module is not None
            and path
            and (module.__name__ == "__main__" or module.__name__.startswith(FILE_MODULE_PREFIX))
        ):
            return f"{portable_path(path)}:{qualname}"
        return f"{self.fn.__module__}:{qualname}"


@overload
def workflow(fn: Callable[..., Awaitable[Any]], /) -> Workflow: ...


@overload
def workflow(
    *,
    name: str | None = None,
    tools: Iterable[Tool] = (),
    retry: RetryPolicy | None = None,
    checkpoint: CheckpointPolicy | None = None,
    middleware: Iterable[Any] = (),
    code_inputs: Iterable[str] = (),
) -> Callable[[Callable[..., Awaitable[Any]]], Workflow]: ...


def workflow(
    fn: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    tools: Iterable[Tool] = (),
    retry: RetryPolicy | None = None,
    checkpoint: CheckpointPolicy | None = None,
    middleware: Iterable[Any] = (),
    code_inputs: Iterable[str] = (),
) -> Workflow | Callable[[Callable[..., Awaitable[Any]]], Workflow]:
    """Mark ``async def fn(ctx, **inputs)`` as a durable workflow; bare or with options.

    Its parameters after ``ctx`` type its inputs, checked before a task is
    made; its return annotation types its result (`WorkflowSignature`).

    Args:
        name: a name for people (default: the function's).
        tools: the `Tool` objects ``ctx.call_tool`` may call.
        retry: the retry policy of calls whose tool sets none.
        checkpoint: when checkpoints are written and which resume trusts.
        middleware: extra middleware around model and tool calls.
        code_inputs: the inputs the workflow loads or launches code from (a
            module name, a command line): a task's seal covers them, so a
            database writer cannot change them (docs/durability.md).
    """

    def make(f: Callable[..., Awaitable[Any]]) -> Workflow:
        return Workflow(
            f,
            name=name,
            tools=tools,
            retry=retry,
            checkpoint=checkpoint,
            middleware=middleware,
            code_inputs=code_inputs,
        )

    return make if fn is None else make(fn)


def load_module(source: str, trust: CodeTrust | None = None) -> Any:
    """Import a module by dotted name, or load a ``.py`` file by path (once per path).

    `trust` (by default, the one the run enforces, if any) decides what may
    be loaded; a relative ``.py`` path is then looked for under its project
    root. Without one, anything is loaded but a program's entry point
    (``__main__``) or a file or module in a task workspace, and a relative
    path is taken from the current directory. The script this process runs
    is its live ``__main__``, never loaded a second time.

    Code that raises while it loads, ``SystemExit`` included (a module that
    calls ``sys.exit("set API_KEY")`` when a setting is missing), is code
    that does not load: `WorkflowNotFound`, and nothing of it is left in
    ``sys.modules``. Only ``KeyboardInterrupt`` goes through: it is how
    Ctrl-C reaches a program, and a module raising it cannot be told apart
    from a person pressing it. Code that starts tasks (or an event loop)
    while it loads is a program without its ``__main__`` guard:
    `StartsWhenLoaded`, a `WorkflowNotFound` that says so.

    Raises:
        CodeRefused: `trust` does not admit the code, or it is never a task's code.
        WorkflowNotFound: there is no such module or file, or it fails to load.
    """
    trust = trust or enforced_trust()
    if trust is None:
        refuse_unloadable(source)
    if source.endswith(".py"):
        path = trust.python_file(source) if trust else project_path(source)
        if not path.is_file():
            raise WorkflowNotFound(f"no Python file at {path}")
        live = running_script(path)
        if live is not None:
            return live
        name = file_module_name(path)
        if name in sys.modules:
            return sys.modules[name]
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            with loading(source):
                spec.loader.exec_module(module)
        except BaseException as exc:
            sys.modules.pop(name, None)  # never half-loaded: a later load tries it again, whole
            if isinstance(exc, (KeyboardInterrupt, Interrupted)):
                raise
            raise starts_when_loaded(source, exc) or WorkflowNotFound(
                f"cannot load {path}: {_raised(exc)}"
            ) from exc
        return module
    if trust is not None:
        trust.check_module(source)
    try:
        with loading(source):
            return importlib.import_module(source)  # on failure, the import system drops the module
    except (KeyboardInterrupt, Interrupted):
        raise
    except BaseException as exc:
        raise starts_when_loaded(source, exc) or WorkflowNotFound(
            f"cannot import {source!r}: {_raised(exc)}"
        ) from exc


def _raised(exc: BaseException) -> str:
    """What code raised while it loaded, in one line."""
    if isinstance(exc, SystemExit):
        said = "" if exc.code is None else repr(exc.code)
        return f"it exits when imported: sys.exit({_one_line(said)})"
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def portable_reference(reference: str) -> str:
    """A ``file.py:name`` reference with its file relative to the project root when under it."""
    source, sep, qualname = reference.rpartition(":")
    if sep and source.endswith(".py"):
        return f"{portable_path(source)}:{qualname}"
    return reference


def load_workflow(reference: str) -> Workflow:
    """Find the workflow a task's reference names.

    Raises:
        CodeRefused: the code trust the run enforces does not admit its module or file.
        WorkflowNotFound: the module or the name in it does not exist, or is
            not a workflow; or it was defined interactively in another process.
    """
    source, sep, qualname = reference.rpartition(":")
    if not sep or not source or not qualname:
        raise WorkflowNotFound(
            f"workflow reference {reference!r} is not 'module:function' or 'file.py:function'"
        )
    found: Any
    if source.startswith(INTERACTIVE):
        found = find_interactive(reference)
    else:
        found = load_module(source)
        for part in qualname.split("."):
            found = getattr(found, part, None)
            if found is None:
                raise WorkflowNotFound(f"{source} has no {qualname!r}")
    if not isinstance(found, Workflow):
        raise WorkflowNotFound(f"{reference} is not a @ratchet.workflow")
    return found
