"""Helpers for a project's own test suite: `assert_replays`, its stored runs held to the code it tests.

A project keeps a store of runs its workflows made (a SQLite file beside
its tests, or a copy of production's database) and asserts in its suite
that the code under test still replays every one of them, as
``ratchet replay-check`` does in CI (docs/changing-code.md)::

    from ratchet.testing import assert_replays

    def test_recorded_runs_still_replay():
        assert_replays("sqlite:///tests/recorded.db")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from typing_extensions import Unpack

from .engine.replay import ReplayOutcome
from .engine.workflow import Workflow, load_workflow
from .errors import InputError
from .records import TaskFilter
from .runtime import Runtime, SyncRuntime
from .runtime.reading import TaskFilters, task_filter
from .store import StateStore

__all__ = ["assert_replays", "assert_replays_async", "replay_failures"]


def assert_replays(
    store: str,
    *,
    task_ids: Sequence[str] | None = None,
    allow_code: Sequence[str | Path] = (),
    load: Callable[[str], Workflow] = load_workflow,
    **filters: Unpack[TaskFilters],
) -> list[ReplayOutcome]:
    """Assert that the code installed now replays the journals of the stored tasks; return the outcomes.

    Every task of the store at URL `store` is checked, ended ones included:
    a store of recorded runs is mostly of completed ones, each held to its
    whole journal and its result. The filters of ``Runtime.list_tasks``
    (or `task_ids`) narrow it; without a ``status`` they still take every
    status. No model or tool is called, and nothing is written.

    Args:
        allow_code: paths and modules the tasks' code may load from, beyond
            the project root (the current directory) and installed packages.
        load: finds a workflow by its reference (default: as a worker does).

    Raises:
        AssertionError: a task diverges or cannot be checked; its message
            lists every one, a line each, with the seq and the fix.
        InputError: a filter is not one, or a task of `task_ids` does not exist.
        StoreError: the store cannot be opened.
    """
    with SyncRuntime(store, allow_code=allow_code) as rt:
        where, ids = _picked(task_ids, filters)
        outcomes = rt.replay_check(where, task_ids=ids, load=load)
    return _asserted(outcomes)


async def assert_replays_async(
    store: str | StateStore,
    *,
    task_ids: Sequence[str] | None = None,
    allow_code: Sequence[str | Path] = (),
    load: Callable[[str], Workflow] = load_workflow,
    **filters: Unpack[TaskFilters],
) -> list[ReplayOutcome]:
    """`assert_replays` for async tests: ``await assert_replays_async(store)``.

    `store` is a URL, or a `StateStore` open in the test's event loop (the caller closes it).
    """
    async with Runtime(store, allow_code=allow_code) as rt:
        where, ids = _picked(task_ids, filters)
        outcomes = await rt.replay_check(where, task_ids=ids, load=load)
    return _asserted(outcomes)


def replay_failures(outcomes: Sequence[ReplayOutcome]) -> list[str]:
    """A line for each outcome that does not replay: the task, where and how it diverges, and the fix."""
    lines = []
    for outcome in outcomes:
        differs = outcome.divergence
        if outcome.problem is not None:
            lines.append(f"task {outcome.task_id} cannot be checked: {outcome.problem}")
        elif differs is not None:
            lines.append(
                f"task {outcome.task_id}, operation {differs.seq}: recorded {differs.recorded}, "
                f"the code now asks for {differs.requested}; fix: {differs.fix}"
            )
    return lines


def _picked(
    task_ids: Sequence[str] | None, filters: TaskFilters
) -> tuple[TaskFilter | None, Sequence[str] | None]:
    """What to check: the `TaskFilter` of `filters` (every status unless they name one), or `task_ids`."""
    if task_ids is None:
        return task_filter(**filters), None
    if filters:
        raise InputError("name the tasks once: task ids or filters")
    return None, task_ids


def _asserted(outcomes: list[ReplayOutcome]) -> list[ReplayOutcome]:
    failures = replay_failures(outcomes)
    if failures:
        checked = len(outcomes)
        raise AssertionError(
            f"{len(failures)} of {checked} stored task{'s' if checked != 1 else ''} do not replay "
            "with the code installed now:\n" + "\n".join(f"  {line}" for line in failures)
        )
    return outcomes
