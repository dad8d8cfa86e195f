"""A workflow defined in the script that runs it, and loading code for a task without running it.

``python app.py`` runs the script as ``__main__``, and its workflows are
named ``app.py:name``. In that process the reference resolves to the live
``__main__`` (`running_script`): importing the file again would run its
top-level code a second time and make a second set of its objects (a second
tool, a second dict the first one filled).

Anywhere else (a worker, ``ratchet resume``, a later run of another script)
the file is imported under a name of its own, so its
``if __name__ == "__main__":`` part does not run. A script without that
guard runs its program when it is imported: while a task's code loads
(`loading`), starting or running a task raises `StartsWhenLoaded`
(`refuse_while_loading`), and so does, in effect, ``asyncio.run`` at the top
level (there is an event loop running already); either way the task waits
for its code with one line saying to put the entry point under the guard.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, ModuleType, TracebackType

from ..errors import StartsWhenLoaded
from ..trust.code import main_script

__all__ = ["loading", "refuse_while_loading", "running_script", "starts_when_loaded"]

# What is being loaded for a task's code, innermost last. Process-wide, not a context variable: a
# script's top level may start tasks from a thread of its own (a synchronous API's event loop),
# which a context variable would not reach. Loading is synchronous, so nothing else of the event
# loop runs meanwhile.
_LOADING: list[str] = []

_ASYNCIO = Path(asyncio.__file__).parent


def running_script(path: Path) -> ModuleType | None:
    """The live ``__main__`` if `path` (resolved) is the script this process runs, else None."""
    return sys.modules["__main__"] if path == main_script() else None


@contextmanager
def loading(source: str) -> Iterator[None]:
    """Mark `source` (a file or module) as being loaded for a task's code while the block runs."""
    _LOADING.append(source)
    try:
        yield
    finally:
        _LOADING.pop()


def refuse_while_loading() -> None:
    """Refuse to start or run a task while code is being loaded for one.

    Raises:
        StartsWhenLoaded: a module or script is being loaded for a task's code.
    """
    if _LOADING:
        raise StartsWhenLoaded(_guard_message(_LOADING[-1], "starts tasks"))


def starts_when_loaded(source: str, raised: BaseException) -> StartsWhenLoaded | None:
    """What `raised`, out of loading `source`, says if it is a program starting when imported.

    That is `StartsWhenLoaded` from `refuse_while_loading`, or the
    ``RuntimeError`` asyncio raises when its top level runs an event loop
    inside the one that loads it (``asyncio.run(main())`` without a guard).
    """
    if isinstance(raised, StartsWhenLoaded):
        return StartsWhenLoaded(_guard_message(source, "starts tasks"))
    if isinstance(raised, RuntimeError) and _raised_in_asyncio(raised.__traceback__):
        _close_coroutines(raised.__traceback__)
        return StartsWhenLoaded(_guard_message(source, "runs an event loop (asyncio.run)"))
    return None


def _guard_message(source: str, what: str) -> str:
    name = Path(source).name if source.endswith(".py") else source
    return (
        f"{name} {what} when it is imported, so it cannot be loaded for a task's code: put its "
        'entry point under `if __name__ == "__main__":` (docs/durability.md, "Scripts and notebooks")'
    )


def _frames(traceback: TracebackType | None) -> Iterator[FrameType]:
    while traceback is not None:
        yield traceback.tb_frame
        traceback = traceback.tb_next


def _in_asyncio(frame: FrameType) -> bool:
    return Path(frame.f_code.co_filename).is_relative_to(_ASYNCIO)


def _raised_in_asyncio(traceback: TracebackType | None) -> bool:
    frames = list(_frames(traceback))
    return bool(frames) and _in_asyncio(frames[-1])


def _close_coroutines(traceback: TracebackType | None) -> None:
    """Close the coroutine the script handed asyncio (``main()``): it never runs, and Python would
    warn, when it is collected, that it was never awaited."""
    for frame in _frames(traceback):
        if _in_asyncio(frame):
            for value in frame.f_locals.values():
                if inspect.iscoroutine(value):
                    value.close()
