"""What a route handler is given: the app's `Runtime`, and the paging and filter parameters."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from ..runtime import Runtime

__all__ = ["ID_PATTERN", "MAX_ID_CHARS", "RuntimeDep", "TaskId", "runtime_of"]

MAX_ID_CHARS = 512
# An id is text without control characters: a NUL, say, no store can hold (and no task has).
ID_PATTERN = r"^[^\x00-\x1f\x7f]+$"


def runtime_of(request: Request) -> Runtime:
    """The `Runtime` over the app's store (made by `create_app`)."""
    runtime = request.app.state.runtime
    assert isinstance(runtime, Runtime)
    return runtime


RuntimeDep = Annotated[Runtime, Depends(runtime_of)]
TaskId = Annotated[
    str, Path(min_length=1, max_length=MAX_ID_CHARS, pattern=ID_PATTERN, description="The task's id.")
]
