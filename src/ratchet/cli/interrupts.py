"""Ctrl-C (SIGINT) in the `ratchet` program, from its first moment to its last: one handler.

Python's own answer to SIGINT, KeyboardInterrupt raised wherever the program
happens to be, and `asyncio.run`'s, cancelling its task, leave windows: one
while the CLI is imported (about a second) printed a traceback; one while an
event loop is made or closed printed Python's complaints about half-made
objects; one that lands in a finaliser is printed as ignored and lost; and a
cancellation can itself be lost (on Python 3.11 `asyncio.wait_for` drops one
that arrives as what it waits for completes, as a connection pool's does), so
a worker given Ctrl-C while it started went on running.

`main` installs `Interrupts` before it imports the commands, and it stays
until the process ends:

- outside an event loop, a Ctrl-C ends the program quietly with the exit code
  of an interrupt (`Interrupted`, a `SystemExit`, which prints nothing, passes
  through the commands' ``except Exception`` and ends the program wherever it
  is raised, even while `--tools` or a workflow's module is imported);
- while `run` makes or closes the command's event loop, a Ctrl-C is held (a
  second one is not) and answered as soon as the loop runs, or once it is
  closed;
- while the command's coroutine runs, a Ctrl-C cancels it, and `run` raises
  KeyboardInterrupt once it ended (the commands that run a task say how to
  continue it); a command that stops in its own way (`ratchet worker`) is
  told instead;
- one heard but never answered (raised in a finaliser or a weak reference's
  callback, which Python drops and reports as "Exception ignored") is not
  reported, and stops the next `run` before it starts, or ends the program
  as interrupted once its command returns;
- once the program is ending, a first Ctrl-C is ignored (its exit code is
  decided) and a second ends it at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import Interrupted

if TYPE_CHECKING:
    import asyncio

__all__ = ["EXIT_INTERRUPTED", "Interrupts", "as_python_does", "interrupted_exit", "run"]

T = TypeVar("T")

EXIT_INTERRUPTED = 130
"""The exit code of a command a Ctrl-C stopped (128 + SIGINT, as a shell reports one)."""

# A worker stopped by Ctrl-C stops as it was asked to: its exit code is 0 (docs/cli.md).
_STOPS_CLEANLY = frozenset({"worker"})


def interrupted_exit(args: Sequence[str]) -> int:
    """The exit code of the command `args` name when a Ctrl-C stops it before it could say."""
    command = next((arg for arg in args if not arg.startswith("-")), None)
    return 0 if command in _STOPS_CLEANLY else EXIT_INTERRUPTED


class Interrupts:
    """The SIGINT handler of one `ratchet` process (see the module's docstring).

    Args:
        exit_code: the exit code of a Ctrl-C that stops the program outside
            the command's coroutine.
    """

    def __init__(self, exit_code: int = EXIT_INTERRUPTED) -> None:
        self.exit_code = exit_code
        self.heard = 0  # Ctrl-Cs so far
        # Of them, those a `run` answered. One that ended the program outside a `run` is not counted:
        # if something swallowed it on the way, the next `run` sees it pending and stops.
        self.answered = 0
        self._loop: asyncio.AbstractEventLoop | None = None  # while the command's coroutine runs
        self._task: asyncio.Task[Any] | None = None
        self._told: Callable[[], None] | None = None
        self._cancelled = False
        self._holding = False  # while an event loop is made or closed
        self._ending_at: int | None = None  # `heard` when the program began to end
        self._reporting: Callable[[Any], object] = sys.unraisablehook

    @classmethod
    def install(cls, exit_code: int = EXIT_INTERRUPTED) -> Interrupts | None:
        """Make a new handler SIGINT's; None where it cannot be (only the main thread handles signals)."""
        if threading.current_thread() is not threading.main_thread():
            return None
        handler = cls(exit_code)
        signal.signal(signal.SIGINT, handler)
        handler._reporting = sys.unraisablehook
        sys.unraisablehook = handler._unraisable
        return handler

    def uninstall(self, previous: Any) -> None:
        """Give SIGINT back to `previous`, and Python's report of dropped exceptions back to its own."""
        signal.signal(signal.SIGINT, previous)
        if sys.unraisablehook == self._unraisable:
            sys.unraisablehook = self._reporting

    @staticmethod
    def installed() -> Interrupts | None:
        """The handler SIGINT has now, if it is one of these."""
        current = signal.getsignal(signal.SIGINT)
        return current if isinstance(current, Interrupts) else None

    @property
    def pending(self) -> bool:
        """Whether a Ctrl-C was heard and not answered."""
        return self.heard > self.answered

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.heard += 1
        if self._ending_at is not None:
            if self.heard - self._ending_at > 1:
                _end_now(self.exit_code)
            return
        if self._loop is not None:
            if self._cancelled and self._told is None:  # a second one: stop at once
                self.answered = self.heard
                raise KeyboardInterrupt
            # Answered in the loop, between two of its callbacks, not in the middle of one.
            self._loop.call_soon_threadsafe(self._deliver)
            return
        if self._holding and self.heard - self.answered == 1:
            return
        # Ending here, a command's coroutine made but not yet run is no mistake worth a warning.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        raise Interrupted(self.exit_code)  # a loader reporting a module's own sys.exit() lets it through

    def _unraisable(self, unraisable: Any) -> None:
        # Our own Ctrl-C, raised where Python cannot pass it on (an importer's module lock
        # going away, a finaliser): it stays pending and is answered later, not printed now.
        if isinstance(unraisable.exc_value, (Interrupted, KeyboardInterrupt)) and self.pending:
            return
        self._reporting(unraisable)

    def ending(self) -> None:
        """The program is ending with its exit code decided: a Ctrl-C now changes nothing (two end it)."""
        self._ending_at = self.heard

    def run(self, work: Coroutine[Any, Any, T], *, on_interrupt: Callable[[], None] | None = None) -> T:
        """Run `work` in a new event loop to its end; a Ctrl-C meanwhile cancels it, or calls `on_interrupt`.

        Raises:
            KeyboardInterrupt: a Ctrl-C cancelled `work` (or came while its loop was made or
                closed, or was never answered before), and no `on_interrupt` was given.
        """
        import asyncio  # here, not at the top: `main` installs the handler before it imports anything

        if self.pending:
            work.close()
            self.answered = self.heard
            raise KeyboardInterrupt
        self._told, self._cancelled, self._holding = on_interrupt, False, True
        try:
            result = asyncio.run(self._inside(work))
        except asyncio.CancelledError:
            if not self._cancelled:
                raise
            self.answered = self.heard
            raise KeyboardInterrupt from None
        finally:
            self._holding = False
            told, self._told = self._told, None
        if self._cancelled or (self.pending and told is None):  # its cancellation was lost, or came late
            self.answered = self.heard
            raise KeyboardInterrupt
        self.answered = self.heard  # told after its coroutine ended: it had stopped anyway
        return result

    async def _inside(self, work: Coroutine[Any, Any, T]) -> T:
        import asyncio

        self._loop, self._task = asyncio.get_running_loop(), asyncio.current_task()
        try:
            if self.pending and self._told is None:  # heard while the loop was made: never start
                work.close()
                self.answered, self._cancelled = self.heard, True
                raise asyncio.CancelledError
            while self.pending:  # heard while the loop was made: tell it before it starts
                self._deliver()
            return await work
        finally:
            self._loop = self._task = None

    def _deliver(self) -> None:
        """Answer one Ctrl-C in the loop: tell the coroutine, or cancel it (a second one stops it at once)."""
        if not self.pending or self._task is None:
            return
        self.answered += 1
        if self._told is not None:
            self._told()
        elif self._cancelled:
            raise KeyboardInterrupt
        else:
            self._cancelled = True
            self._task.cancel()


def run(work: Coroutine[Any, Any, T], *, on_interrupt: Callable[[], None] | None = None) -> T:
    """Run a command's coroutine under the process's `Interrupts` (see `Interrupts.run`).

    Called without one installed (a command's function called by Python code,
    not by `main`), it installs one for the call; off the main thread, where
    no signal is handled, the coroutine runs as `asyncio.run` runs it.
    """
    handler = Interrupts.installed()
    if handler is not None:
        return handler.run(work, on_interrupt=on_interrupt)
    previous = signal.getsignal(signal.SIGINT)
    handler = Interrupts.install()
    if handler is None:
        import asyncio

        return asyncio.run(work)
    try:
        return handler.run(work, on_interrupt=on_interrupt)
    finally:
        handler.uninstall(previous)


@contextlib.contextmanager
def as_python_does() -> Iterator[None]:
    """Answer Ctrl-C as Python and `asyncio.run` do, for the block: for a command with its own answer.

    `ratchet chat` runs each turn in an event loop of its own and answers a
    KeyboardInterrupt with the command that finishes the turn.
    """
    previous = signal.getsignal(signal.SIGINT)
    if Interrupts.installed() is None:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _end_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe, a write under way: ending matters more
            stream.flush()
    os._exit(code)
