"""A signal while a tool runs: the tool finishes, its outcome is journaled, and no run repeats it.

Each test starts a real program (`ratchet run`, `ratchet worker`, or a
program of its own on `Runtime`) whose tool writes its effect, a line of a
ledger file, and then waits until the test makes a release file. The test
sends the signal while the tool waits, sees the program say it heard it,
releases the tool, and looks: the program stopped, the call's outcome is in
the journal (succeeded, not in doubt), and the run that continues the task
finds it there: the ledger holds the effect once. Every wait is bounded by
`WAIT` and polls; none measures time.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.records import Operation, OpStatus, TaskStatus

from ..helpers.cli import LineReader, RunRatchet, as_from_a_terminal, ratchet_env
from .run_support import acts, script
from .task_support import start_ratchet, stored_task, with_runtime, with_store

# The tools and the workflow of the tests, written into each test's directory as effects.py.
EFFECTS = '''
import asyncio
import time
from pathlib import Path

import ratchet

HERE = Path(__file__).parent
PATIENCE = 120.0  # seconds a tool waits to be released before it returns anyway


def _effect(entry: str) -> None:
    with (HERE / "ledger.txt").open("a") as out:
        out.write(entry + "\\n")


def _waited_too_long(began: float) -> bool:
    return time.monotonic() - began > PATIENCE


@ratchet.tool
def send(entry: str) -> str:
    """Send the entry (a line of the ledger), then wait for the release file."""
    _effect(entry)
    began = time.monotonic()
    while not (HERE / "release").exists() and not _waited_too_long(began):
        time.sleep(0.01)
    return f"sent {entry}"


@ratchet.tool
async def send_async(entry: str) -> str:
    """Send the entry (a line of the ledger), then wait for the release file."""
    _effect(entry)
    began = time.monotonic()
    while not (HERE / "release").exists() and not _waited_too_long(began):
        await asyncio.sleep(0.01)
    return f"sent {entry}"


@ratchet.workflow(tools=[send, send_async])
async def deliver(ctx: ratchet.Context, tool: str) -> list[str]:
    """Send the mail, then its receipt, with `tool`."""
    return [await ctx.call_tool(tool, {"entry": entry}) for entry in ("mail", "receipt")]
'''

# A program that runs a task of effects.py with `Runtime`, as a user's would: `start URL TOOL`
# makes the task (its id on the first line) and runs it; `resume URL TASK` runs it on.
PROGRAM = """
import asyncio
import sys
from pathlib import Path

import ratchet

DELIVER = f"{Path(__file__).parent / 'effects.py'}:deliver"


async def main(command: str, url: str, what: str) -> None:
    async with ratchet.Runtime(url) as runtime:
        if command == "start":
            task_id = await runtime.submit(DELIVER, {"tool": what}, queue=False)
            print(task_id, flush=True)
        else:
            task_id = what
        task = await runtime.resume(task_id)
        print(task.status, flush=True)


try:
    asyncio.run(main(*sys.argv[1:]))
except KeyboardInterrupt:
    sys.exit(130)
"""

TOOLS = {"sync": "send", "async": "send_async"}

# The signals that stop `ratchet run`: its exit code, and the word it starts its last line with.
STOPS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]

# The bound of every wait: generous, for a loaded machine starting a program on PostgreSQL.
WAIT = 60.0

# What each program says once it heard the signal while the tool runs.
HEARD_IN_A_RUN = "stopping once"
HEARD_BY_A_WORKER = ": stopping; running tasks finish their current call"


@pytest.fixture
def here(tmp_path: Path) -> Iterator[Path]:
    """The test's directory, with effects.py; the tools are released at the end whatever happened."""
    (tmp_path / "effects.py").write_text(EFFECTS)
    try:
        yield tmp_path
    finally:
        (tmp_path / "release").touch()


def ledger(directory: Path) -> list[str]:
    path = directory / "ledger.txt"
    return path.read_text().splitlines() if path.exists() else []


def wait_for_effect(directory: Path, process: subprocess.Popen[str]) -> None:
    """Return once the tool wrote its effect (it then waits to be released); fail if `process` ends first."""
    deadline = time.monotonic() + WAIT
    while ledger(directory) != ["mail"]:
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"it ended ({process.returncode}) first: {out} {err}")
        assert time.monotonic() < deadline, f"no effect within {WAIT} s"
        time.sleep(0.02)


def deliver(directory: Path) -> str:
    """The reference of effects.py's workflow (by path: the test process loads it too)."""
    return f"{directory / 'effects.py'}:deliver"


def release_and_end(directory: Path, process: subprocess.Popen[str], errors: LineReader) -> tuple[int, str]:
    """Release the tool; return the exit code and stderr once the program ended."""
    (directory / "release").touch()
    try:
        code = process.wait(WAIT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError(f"it did not end within {WAIT} s of the release") from None
    return code, "".join(errors.rest(WAIT))


def the_call(url: str, task_id: str, tool: str) -> Operation:
    """The journal's record of the task's first call of `tool`: the one the signal came during."""
    ops = with_store(url, lambda store: store.list_ops(task_id))
    return next(op for op in ops if op.name == tool)


def assert_recorded_once(url: str, task_id: str, tool: str, directory: Path) -> None:
    """The call's outcome was written before the program stopped: succeeded, with the tool's result."""
    op = the_call(url, task_id, tool)
    assert (op.status, op.output) == (OpStatus.SUCCEEDED, "sent mail"), op
    assert ledger(directory) == ["mail"]


# --------------------------------------------------------------------------- ratchet run


def start_run(directory: Path, tool: str, url: str) -> subprocess.Popen[str]:
    """`ratchet run` of an agent whose one step sends the mail with `tool`."""
    model = script(directory, steps=("a",), act=acts("mail", tool=tool))
    return start_ratchet(
        directory, "run", "send the mail", "-m", model, "--tools", "effects.py", "--store", url
    )


@pytest.mark.parametrize("kind", sorted(TOOLS))
@pytest.mark.parametrize(("signum", "code", "said"), STOPS)
def test_a_signal_to_ratchet_run_lets_the_tool_finish_and_journals_it(
    run_ratchet: RunRatchet, url: str, here: Path, kind: str, signum: signal.Signals, code: int, said: str
) -> None:
    tool = TOOLS[kind]
    process = start_run(here, tool, url)
    errors = LineReader(process.stderr)  # type: ignore[arg-type]
    wait_for_effect(here, process)

    process.send_signal(signum)
    errors.wait_for(HEARD_IN_A_RUN, WAIT)
    stopped, err = release_and_end(here, process, errors)

    assert stopped == code, err
    assert "Traceback" not in err
    [task_id] = [line.split()[2] for line in err.splitlines() if line.startswith(f"{said}: task ")]
    assert f"continue it with `ratchet resume --store {url} {task_id}`" in err
    assert_recorded_once(url, task_id, tool, here)

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert stored_task(url, task_id).status is TaskStatus.COMPLETED
    assert ledger(here) == ["mail"]  # the call replayed: nothing sent twice


@pytest.mark.parametrize(("signum", "code", "said"), STOPS)
def test_a_second_signal_stops_at_once_and_leaves_the_call_in_doubt(
    url: str, here: Path, signum: signal.Signals, code: int, said: str
) -> None:
    process = start_run(here, "send_async", url)
    errors = LineReader(process.stderr)  # type: ignore[arg-type]
    wait_for_effect(here, process)
    process.send_signal(signum)
    errors.wait_for(HEARD_IN_A_RUN, WAIT)

    process.send_signal(signum)  # the tool is not released

    assert process.wait(WAIT) == code
    err = "".join(errors.rest(WAIT))
    assert "Traceback" not in err
    [task_id] = [line.split()[2] for line in err.splitlines() if line.startswith(f"{said}: task ")]
    assert the_call(url, task_id, "send_async").status is OpStatus.STARTED  # in doubt, as after a crash


# --------------------------------------------------------------------------- ratchet worker


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_sigterm_to_a_worker_lets_the_tool_finish_and_journals_it(
    run_ratchet: RunRatchet, url: str, here: Path, kind: str
) -> None:
    """As a process manager stops it (test_cli_worker.py stops one with Ctrl-C the same way)."""
    tool = TOOLS[kind]
    task_id = with_runtime(url, lambda runtime: runtime.submit(deliver(here), {"tool": tool}))
    process = start_ratchet(here, "worker", "--store", url, "--poll", "0.05")
    errors = LineReader(process.stderr)  # type: ignore[arg-type]
    wait_for_effect(here, process)

    process.send_signal(signal.SIGTERM)
    errors.wait_for(HEARD_BY_A_WORKER, WAIT)
    stopped, err = release_and_end(here, process, errors)

    assert stopped == 0, err
    assert "Traceback" not in err
    assert_recorded_once(url, task_id, tool, here)
    assert stored_task(url, task_id).status is TaskStatus.RUNNING  # handed back before the receipt

    done = run_ratchet("resume", task_id, "--store", url)

    assert done.returncode == 0, done.stderr
    assert stored_task(url, task_id).status is TaskStatus.COMPLETED
    assert ledger(here) == ["mail", "receipt"]


# --------------------------------------------------------------------------- a program on Runtime


def start_program(directory: Path, *args: str) -> subprocess.Popen[str]:
    (directory / "program.py").write_text(PROGRAM)
    return subprocess.Popen(
        [sys.executable, "program.py", *args],
        cwd=directory,
        env=ratchet_env(),
        preexec_fn=as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("kind", sorted(TOOLS))
def test_ctrl_c_in_a_program_lets_the_tool_finish_and_journals_it(url: str, here: Path, kind: str) -> None:
    tool = TOOLS[kind]
    process = start_program(here, "start", url, tool)
    errors = LineReader(process.stderr)  # type: ignore[arg-type]
    assert process.stdout is not None
    task_id = process.stdout.readline().strip()
    wait_for_effect(here, process)

    process.send_signal(signal.SIGINT)  # asyncio.run cancels the program's task
    errors.wait_for(HEARD_IN_A_RUN, WAIT)
    stopped, err = release_and_end(here, process, errors)

    assert stopped == 130, err
    assert_recorded_once(url, task_id, tool, here)

    again = start_program(here, "resume", url, task_id)
    out, err = again.communicate(timeout=WAIT)

    assert again.returncode == 0, err
    assert out.strip() == "completed"
    assert ledger(here) == ["mail", "receipt"]
