"""`StateStore`'s wrappers are the `StoreOps` operations they wrap: same names, kinds and parameters.

`StateStore` (store/base/) runs each operation in a transaction of its own
through a method written by hand, so that a type checker sees every
parameter (wrappers made at run time once hid ``fence=`` from it); those of
the leases and of LangGraph's checkpoints are mixed in. Written by
hand, a wrapper can drift from its operation: a parameter left out or not
passed on, a default changed, a ``fence=`` forgotten. These tests hold each
wrapper to its operation's signature, then run it on a store whose
transactions only note what reaches them: the same operation, with every
argument passed on, in a read or a write, behind the fence it was given.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from ratchet.store import StateStore, StoreOps

OPERATIONS = sorted(StoreOps.__abstractmethods__)

# The writes that take no fence: no task's run makes them. A writer from outside the run holds the
# task first (`get_task_locked`, `hold_run`); only an ended task no lease holds is deleted;
# LangGraph's checkpointer deletes, copies and prunes whole threads, not a step of a run; a
# worker's record of itself is no task's; nor are a key's limits and pacing (a queue's turn releases
# the lease it judges rather than writing behind it); and a person sets and deletes a spend cap.
UNFENCED_WRITES = {
    "get_task_locked",
    "hold_run",
    "delete_task",
    "delete_langgraph_thread",
    "delete_langgraph_runs",
    "copy_langgraph_thread",
    "prune_langgraph_threads",
    "record_worker",
    "remove_worker",
    "forget_workers",
    "set_limit",
    "delete_limit",
    "take_turn",
    "settle_tokens",
    "block_limit",
    "take_slot",
    "release_slots",
    "queue_turn",
    "set_spend_cap",
    "delete_spend_cap",
}

_Call = tuple[str, tuple[Any, ...], dict[str, Any]]  # an operation's name, its arguments

FENCE = inspect.Parameter("fence", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Lease | None")


class _Arg:
    """A value passed for one parameter, told apart from every other by identity."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


class _NotingOps:
    """A transaction's operations that only note each call (name, arguments) and return None."""

    def __init__(self, calls: list[_Call]) -> None:
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> None:
            self._calls.append((name, args, kwargs))

        return call


class _Opened:
    def __init__(self, ops: _NotingOps) -> None:
        self.ops = ops
        self.touched: set[str] = set()

    async def end(self, *, commit: bool) -> None:
        pass


class _NotingStore(StateStore):
    """A store whose transactions note the calls made in them, and whether each was a write."""

    def __init__(self) -> None:
        super().__init__()
        self.url = "noting://"
        self.writes: list[bool] = []
        self.calls: list[_Call] = []

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def _begin(self, *, write: bool) -> Any:
        self.writes.append(write)
        return _Opened(_NotingOps(self.calls))


def wrapper_of(name: str) -> Any:
    """StateStore's own method for the operation `name`: written on it or on a mixin of it, never the
    interface's declaration it inherits (None when there is none)."""
    for cls in StateStore.__mro__:
        if name in vars(cls):
            return None if cls in StoreOps.__mro__ else vars(cls)[name]
    return None


def test_unfenced_writes_are_operations() -> None:
    assert set(OPERATIONS) >= UNFENCED_WRITES


@pytest.mark.parametrize("name", OPERATIONS)
def test_wrapper_has_its_operations_signature(name: str) -> None:
    wrapper, op = wrapper_of(name), getattr(StoreOps, name)
    assert wrapper is not None, f"StateStore has no wrapper of {name}"
    assert inspect.iscoroutinefunction(wrapper) == inspect.iscoroutinefunction(op)
    wrapped, declared = inspect.signature(wrapper), inspect.signature(op)
    assert [p for p in wrapped.parameters.values() if p.name != "fence"] == list(declared.parameters.values())
    assert wrapped.return_annotation == declared.return_annotation
    if "fence" in wrapped.parameters:
        assert list(wrapped.parameters.values())[-1] == FENCE


@pytest.mark.parametrize("name", OPERATIONS)
async def test_wrapper_passes_every_argument_to_its_operation(name: str) -> None:
    store = _NotingStore()
    declared = inspect.signature(getattr(StoreOps, name))
    args = {param: _Arg(param) for param in declared.parameters if param != "self"}
    fenced = "fence" in inspect.signature(getattr(StateStore, name)).parameters
    lease = _Arg("fence")
    await getattr(store, name)(**args, **({"fence": lease} if fenced else {}))

    [write] = store.writes
    if write:
        assert fenced != (name in UNFENCED_WRITES), (
            f"{name} writes: it takes fence= unless UNFENCED_WRITES names it"
        )
    else:
        assert not fenced, f"{name} only reads: a fence would check nothing"
        assert name not in UNFENCED_WRITES
    checks: list[_Call] = [("check_fence", (lease,), {})] if fenced else []
    assert store.calls[: len(checks)] == checks, "the fence is checked before anything is done"
    [(called, passed, passed_by_name)] = store.calls[len(checks) :]
    assert called == name
    bound = declared.bind(None, *passed, **passed_by_name).arguments
    assert {param: value for param, value in bound.items() if param != "self"} == args
