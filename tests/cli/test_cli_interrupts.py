"""Ctrl-C at any moment of a command's start, sent as a terminal sends it: SIGINT to a real process.

Each test starts the command several times and interrupts each start at
another moment, spread from the first line of `ratchet.cli.main` to just past
the moment the command says it is up (measured by the first trial, so the
spread holds on a slow machine too): while the commands are imported, while
the options are read, while the event loop is made, while the store opens,
and once it works.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet.cli.store_access import run_async

from ..helpers.cli import LineReader, ratchet_command, ratchet_env
from .run_support import TOOLS, acts, script
from .task_support import SIGNAL_TIMEOUT

# The console script `ratchet` (`from ratchet.cli import main`), with an audit hook that says on
# stdout when the commands begin to be imported: `main` has made Ctrl-C its own by then. Before
# it, the interpreter starts up (site, the package's empty `__init__`), where SIGINT is Python's.
LAUNCHER = """
import os, sys

def _importing(event, args):
    if event == "import" and args[0] == "ratchet.cli.application" and not _importing.said:
        _importing.said = True
        os.write(1, b"importing the commands\\n")

_importing.said = False
sys.addaudithook(_importing)
from ratchet.cli import main
sys.exit(main())
"""
IMPORTING = "importing the commands"
IN_FLIGHT = ": stopping once record(entry="

# When each trial's Ctrl-C comes, as a share of the time from the first import of the commands
# to the line that says the command is up.
MOMENTS = (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.1)


def _start(cwd: Path, *args: str) -> tuple[subprocess.Popen[str], LineReader]:
    process = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, *args],
        cwd=cwd,
        env=ratchet_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    reader = LineReader(process.stdout)  # type: ignore[arg-type]
    reader.wait_for(IMPORTING, SIGNAL_TIMEOUT)
    return process, reader


def _interrupted(process: subprocess.Popen[str], reader: LineReader) -> tuple[str, str]:
    """Send Ctrl-C; return stdout (without the launcher's line) and stderr once the process ended."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(SIGNAL_TIMEOUT)  # what it says on stderr fits in the pipe meanwhile
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"Ctrl-C did not stop it within {SIGNAL_TIMEOUT} s") from None
    assert process.stderr is not None
    err = process.stderr.read()
    process.stderr.close()
    out = "".join(line for line in reader.rest(SIGNAL_TIMEOUT) if IMPORTING not in line)
    return out, err


def _interrupt_at_every_moment(
    cwd: Path, args: tuple[str, ...], up: str, check: Callable[[float, int, str, str], None]
) -> None:
    """Start `args` once per moment of `MOMENTS` and interrupt it then; `check` each outcome.

    The first start is interrupted once it printed `up`, and times the start.
    """
    process, reader = _start(cwd, *args)
    began = time.monotonic()
    reader.wait_for(up, SIGNAL_TIMEOUT)
    start_up = time.monotonic() - began
    out, err = _interrupted(process, reader)
    check(-1.0, process.returncode, out, err)
    for moment in MOMENTS:
        process, reader = _start(cwd, *args)
        time.sleep(moment * start_up)
        out, err = _interrupted(process, reader)
        check(moment, process.returncode, out, err)


def _no_traceback(moment: float, out: str, err: str) -> None:
    for noise in ("Traceback", "Exception ignored", "never awaited", "KeyboardInterrupt"):
        assert noise not in out + err, (moment, out, err)


def test_ctrl_c_at_any_moment_of_a_workers_start_stops_it_as_one_later_does(tmp_path: Path, url: str) -> None:
    def check(moment: float, code: int, out: str, err: str) -> None:
        assert code == 0, (moment, code, out, err)  # docs/cli.md: a worker stopped by Ctrl-C exits 0
        _no_traceback(moment, out, err)
        if out:  # it was up: it said it stops
            assert "SIGINT: stopping" in err, (moment, out, err)
            assert f"worker w1 on {url}" in out

    _interrupt_at_every_moment(
        tmp_path, ("worker", "--name", "w1", "--poll", "0.05", "--store", url), "worker w1 on", check
    )


def test_ctrl_c_at_any_moment_of_a_runs_start_is_one_line_at_most_and_exit_130(tmp_path: Path) -> None:
    (tmp_path / "tools.py").write_text(TOOLS)
    model = script(tmp_path, act=[*acts("a", delay=60), *acts("b")])  # then it thinks for a minute
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    args = ("run", "keep the ledger", "--model", model, "--tools", "tools.py", "--store", url)

    def check(moment: float, code: int, out: str, err: str) -> None:
        assert code == 130, (moment, code, out, err)
        _no_traceback(moment, out, err)
        # A Ctrl-C that lands while `record` runs says first that the call is let finish, so that
        # what it did is journaled (engine/calls/in_flight.py): the one other line allowed.
        lines = [line for line in err.splitlines() if IN_FLIGHT not in line]
        assert len(lines) <= 1, (moment, err)
        if " created; it runs here" in out:  # the task exists: the line says how to go on with it
            assert lines and lines[0].startswith("interrupted: task "), (moment, err)

    _interrupt_at_every_moment(tmp_path, args, " created; it runs here", check)


def test_a_ctrl_c_while_the_tools_load_is_an_interrupt_not_a_tools_error(tmp_path: Path) -> None:
    """The handler ends the program with a SystemExit; the loader must not take it for the module's own.

    Found by the test above on a slow machine: its Ctrl-C came as `--tools` was imported, and
    `ratchet run` exited 2 with "cannot load tools.py: it exits when imported: sys.exit(130)".
    """
    (tmp_path / "tools.py").write_text(
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C, from inside the import\n"
        "time.sleep(30)\n"
    )
    model = script(tmp_path, act=acts("a"))
    args = ("run", "keep the ledger", "--model", model, "--tools", "tools.py")
    done = subprocess.run(
        ratchet_command(*args, "--store", f"sqlite:///{tmp_path / 'ratchet.db'}"),
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=SIGNAL_TIMEOUT,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    assert "error:" not in done.stderr and "cannot load" not in done.stderr, done.stderr
    _no_traceback(0.0, done.stdout, done.stderr)


# A library that makes whatever its Python callbacks raise an error of its own, as pydantic-core
# does while it builds a model (a SchemaError): here, an import hook in front of the `tasks` command.
WRAPPING_LAUNCHER = """
import os, signal, sys, time

class Wrapping:
    def find_spec(self, name, path=None, target=None):
        if name != "ratchet.cli.tasks":
            return None
        try:
            os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C, while the library's callback runs
            time.sleep(30)
        except BaseException as caught:
            raise RuntimeError(f"Error building a validator: {caught!r}") from None
        return None

sys.meta_path.insert(0, Wrapping())
from ratchet.cli import main
sys.exit(main())
"""


def test_a_ctrl_c_a_library_turns_into_its_own_error_still_ends_the_program_as_interrupted(
    tmp_path: Path,
) -> None:
    """Found by the first test on a clean clone: the Ctrl-C landed while pydantic built a model, and
    `ratchet run` printed pydantic-core's SchemaError ("... Interrupted: 130") as a traceback, exit 1."""
    done = subprocess.run(
        [sys.executable, "-c", WRAPPING_LAUNCHER, "tasks", "--store", f"sqlite:///{tmp_path / 'r.db'}"],
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=SIGNAL_TIMEOUT,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    _no_traceback(0.0, done.stdout, done.stderr)
    assert done.stderr.count("\n") <= 1, done.stderr


# A weak reference's callback, as importlib's module locks have, that a Ctrl-C lands in while
# the commands are imported: Python drops what the callback raises and reports it as ignored.
DROPPING_LAUNCHER = """
import os, signal, sys, time, weakref

class Lock:
    pass

def gone(reference):
    os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C, while Python runs the callback
    time.sleep(30)

class Dropping:
    def find_spec(self, name, path=None, target=None):
        if name == "ratchet.cli.tasks":
            lock = Lock()
            keep = weakref.ref(lock, gone)
            del lock
        return None

sys.meta_path.insert(0, Dropping())
from ratchet.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("option", ["--json", "--help"])
def test_a_ctrl_c_python_drops_in_a_callback_is_not_reported_and_still_ends_the_program(
    tmp_path: Path, option: str
) -> None:
    """Found by the run test above in CI: the Ctrl-C landed in importlib's module-lock callback, and
    `ratchet run` printed "Exception ignored in: <function _get_module_lock.<locals>.cb ...>" and a
    traceback before its one line. `tasks` answers it when it runs its coroutine; `tasks --help`, which
    runs none, once it printed its help."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            DROPPING_LAUNCHER,
            "tasks",
            option,
            "--store",
            f"sqlite:///{tmp_path / 'r.db'}",
        ],
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=SIGNAL_TIMEOUT,
    )
    assert done.returncode == 130, (done.stdout, done.stderr)
    _no_traceback(0.0, done.stdout, done.stderr)
    assert done.stderr.count("\n") <= 1, done.stderr


def test_a_ctrl_c_whose_cancellation_is_lost_still_ends_the_command() -> None:
    """On Python 3.11 `asyncio.wait_for` drops a cancellation that comes as what it waits for is done.

    A connection pool's wait does: a worker whose Ctrl-C was lost so went on working.
    """

    async def loses_its_cancellation() -> str:
        os.kill(os.getpid(), signal.SIGINT)
        try:
            await asyncio.sleep(SIGNAL_TIMEOUT)
        except asyncio.CancelledError:
            this = asyncio.current_task()
            assert this is not None
            this.uncancel()  # as wait_for does when it returns the result instead
        return "went on"

    with pytest.raises(KeyboardInterrupt):
        run_async(loses_its_cancellation())
