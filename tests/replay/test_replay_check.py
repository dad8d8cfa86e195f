"""`Runtime.replay_check` and `assert_replays` over runs recorded for real, on SQLite and PostgreSQL.

A workflow module is written to the test's directory and run into the store;
then the code "installed now" is that module or a changed copy of it (loaded
in its place by `load`). Each check must replay what replays, name the seq
where a change diverges, run no tool and write nothing.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ratchet import Runtime
from ratchet.engine.replay import ReplayOutcome, replay_check_task
from ratchet.engine.workflow import Workflow, load_workflow
from ratchet.errors import TaskNotFound
from ratchet.records import ALL_TASKS, OpStatus
from ratchet.testing import assert_replays, assert_replays_async
from ratchet.trust.code import CodeTrust

from ..helpers.loopback import LoopbackServer, Reply
from ..helpers.raw_sql import change_task_record
from ..providers.test_openai_compat import completion
from .orders import TEAM, every_row, ledger, record_runs, write_orders

PATCH_FIX = 'ctx.patched("<change-id>")'


@pytest.fixture
def module(tmp_path: Path) -> Path:
    return write_orders(tmp_path)


def installed(module: Path, variant: str) -> Callable[[str], Workflow]:
    """A loader that finds the tasks' workflow in `variant` of their module: the code installed now."""
    changed = write_orders(module.parent, variant, name=f"orders_{variant}.py")
    return lambda reference: load_workflow(reference.replace(str(module), str(changed)))


def by_task(outcomes: list[ReplayOutcome]) -> dict[str, ReplayOutcome]:
    return {outcome.task_id: outcome for outcome in outcomes}


async def test_recorded_runs_replay_with_nothing_run_and_nothing_written(url: str, module: Path) -> None:
    ids = await record_runs(url, module)
    calls, rows = ledger(module.parent), every_row(url)
    db_bytes = Path(url.removeprefix("sqlite:///")).read_bytes() if url.startswith("sqlite") else b""

    async with Runtime(url, allow_code=[module.parent]) as rt:
        everything = by_task(await rt.replay_check(ALL_TASKS))
        unended = await rt.replay_check()

    assert all(outcome.ok for outcome in everything.values()), everything
    assert {task: everything[task].replayed for task in ids} == {
        "done-1": 3,  # price, charge, ship
        "asking-1": 4,  # and the question's state patch; the question itself waits, unanswered
        "done-2": 3,
        "asking-2": 4,
        "queued": 0,  # its first call would run live: the check ends there
    }
    assert [outcome.task_id for outcome in unended] == ["asking-1", "asking-2", "queued"]
    assert ledger(module.parent) == calls  # not even the read-only `price` of the queued task ran
    assert every_row(url) == rows
    if db_bytes:
        assert Path(url.removeprefix("sqlite:///")).read_bytes() == db_bytes


async def test_two_calls_reordered_diverge_at_the_seq_of_the_first(url: str, module: Path) -> None:
    await record_runs(url, module)
    calls = ledger(module.parent)

    async with Runtime(url, allow_code=[module.parent]) as rt:
        outcomes = by_task(await rt.replay_check(ALL_TASKS, load=installed(module, "reordered")))

    for task in ("done-1", "asking-1", "done-2", "asking-2"):
        outcome = outcomes[task]
        assert not outcome.ok
        assert outcome.replayed == 1  # price replayed; the charge recorded at 1 is not what is asked
        assert outcome.divergence is not None
        assert (outcome.divergence.seq, outcome.divergence.recorded, outcome.divergence.requested) == (
            1,
            "tool charge",
            "tool ship",
        )
        assert PATCH_FIX in outcome.divergence.fix
    assert outcomes["queued"].ok  # nothing recorded: any code replays an empty journal
    assert ledger(module.parent) == calls


async def test_the_reorder_behind_patched_replays(url: str, module: Path) -> None:
    await record_runs(url, module)

    async with Runtime(url, allow_code=[module.parent]) as rt:
        outcomes = await rt.replay_check(ALL_TASKS, load=installed(module, "patched"))

    assert [outcome.task_id for outcome in outcomes if not outcome.ok] == []
    assert {outcome.task_id: outcome.replayed for outcome in outcomes}["done-1"] == 3


# --------------------------------------------------------------------------- what diverges, on one store


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


async def check(url: str, module: Path, variant: str, task_id: str) -> ReplayOutcome:
    async with Runtime(url) as rt:
        return await replay_check_task(
            rt.store, task_id, load=installed(module, variant), trust=CodeTrust.here([module.parent])
        )


async def test_a_workflow_that_now_ends_before_its_journal_diverges(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)

    outcome = await check(sqlite_url, module, "no_ship", "done-1")

    assert outcome.divergence is not None
    assert (outcome.divergence.seq, outcome.divergence.recorded, outcome.divergence.requested) == (
        2,
        "tool ship",
        "nothing",
    )
    assert PATCH_FIX in outcome.divergence.fix


async def test_a_call_past_a_completed_journal_diverges_but_not_past_an_unfinished_one(
    sqlite_url: str, module: Path
) -> None:
    await record_runs(sqlite_url, module)

    completed = await check(sqlite_url, module, "refund_after", "done-1")
    waiting = await check(sqlite_url, module, "refund_after", "asking-1")

    assert completed.divergence is not None
    assert (completed.divergence.seq, completed.divergence.recorded, completed.divergence.requested) == (
        3,
        "nothing",
        "tool charge",
    )
    assert waiting.ok  # it still waits for its answer: the new call comes after, on its resume


KILLED_RUN = """
import asyncio, sys
from ratchet import Runtime

async def main():
    async with Runtime(sys.argv[1], allow_code=[sys.argv[3]]) as rt:
        await rt.run(sys.argv[2], {"order": "in-doubt"}, task_id="in-doubt")

asyncio.run(main())
"""


def killed_after_the_charge_began(url: str, module: Path) -> None:
    """Run task ``in-doubt`` in a process killed once the charge's intent is committed: the charge
    may or may not have happened."""
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, url, f"{module}:checkout", str(module.parent)],
        env={**os.environ, "RATCHET_CRASH_AT": "after_intent_commit"},
        capture_output=True,
        timeout=60,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr


async def test_a_call_in_doubt_is_the_frontier_and_is_not_settled(sqlite_url: str, module: Path) -> None:
    killed_after_the_charge_began(sqlite_url, module)
    calls = ledger(module.parent)

    as_recorded = await check(sqlite_url, module, "recorded", "in-doubt")
    reordered = await check(sqlite_url, module, "reordered", "in-doubt")

    assert as_recorded.ok and as_recorded.replayed == 1  # the price; the charge in doubt would run live
    assert reordered.divergence is not None  # an unfinished record names its call all the same
    assert (reordered.divergence.seq, reordered.divergence.recorded) == (1, "tool charge")
    assert ledger(module.parent) == calls == ["price in-doubt"]
    async with Runtime(sqlite_url) as rt:
        [op] = [op for op in await rt.store.list_ops("in-doubt") if op.seq == 1]
    assert op.status is OpStatus.STARTED  # still in doubt: a check settles nothing


async def test_a_new_clock_read_is_recorded_nowhere_and_ends_the_check_there(
    sqlite_url: str, module: Path
) -> None:
    await record_runs(sqlite_url, module)

    completed = await check(sqlite_url, module, "clock_after", "done-1")
    waiting = await check(sqlite_url, module, "clock_after", "asking-1")

    assert completed.divergence is not None
    assert (completed.divergence.seq, completed.divergence.recorded, completed.divergence.requested) == (
        3,
        "nothing",
        "clock now",
    )
    assert waiting.ok  # its question is still open: the clock is read after it, on its resume


async def test_a_parent_waiting_on_its_child_replays_and_so_does_the_child(
    sqlite_url: str, tmp_path: Path
) -> None:
    team = tmp_path / "team.py"
    team.write_text(TEAM, encoding="utf-8")
    async with Runtime(sqlite_url, allow_code=[tmp_path]) as rt:
        parent = await rt.run(f"{team}:lead", {"order": "o-1"}, task_id="lead")
        assert parent.status_text == "waiting(children)"
        outcomes = by_task(await rt.replay_check())

    assert sorted(outcomes) == ["lead", "lead.0"]
    assert outcomes["lead"].ok and outcomes["lead"].replayed == 1  # started the child; waits for it
    assert outcomes["lead.0"].ok


async def test_a_completed_task_whose_replay_returns_another_result_diverges(
    sqlite_url: str, module: Path
) -> None:
    await record_runs(sqlite_url, module)

    outcome = await check(sqlite_url, module, "new_result", "done-1")

    assert outcome.replayed == 3
    assert outcome.divergence is not None
    assert outcome.divergence.seq == 3
    assert outcome.divergence.recorded.startswith('result {"charged":"charged 60"')
    assert outcome.divergence.requested == 'result {"charged":"charged 60","shipped":"shipped done-1","v":2}'
    patched = await check(sqlite_url, module, "new_result_patched", "done-1")
    assert patched.ok  # past a completed journal, `ctx.patched` takes the old path: the recorded result


async def test_workflow_code_cannot_swallow_the_frontier(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)
    calls = ledger(module.parent)

    completed = await check(sqlite_url, module, "swallows", "done-1")
    waiting = await check(sqlite_url, module, "swallows", "asking-1")

    assert completed.divergence is not None
    assert (completed.divergence.recorded, completed.divergence.requested) == ("nothing", "tool price")
    assert waiting.divergence is not None  # its journal holds the question where the code asks for a price
    assert (waiting.divergence.seq, waiting.divergence.requested) == (3, "tool price")
    assert ledger(module.parent) == calls


async def test_code_missing_here_is_a_problem_not_a_crash(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)

    async with Runtime(sqlite_url) as rt:
        missing = await replay_check_task(
            rt.store,
            "done-1",
            load=lambda ref: load_workflow(ref.replace("orders.py", "gone.py")),
            trust=CodeTrust.here([module.parent]),
        )

    assert not missing.ok
    assert missing.problem is not None and "gone.py" in missing.problem


async def test_inputs_the_workflow_no_longer_takes_are_a_problem(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)

    outcome = await check(sqlite_url, module, "order_number", "done-1")

    assert outcome.problem is not None
    assert outcome.problem.startswith("the workflow no longer takes the task's inputs: ")
    assert "order" in outcome.problem


async def test_a_task_that_does_not_exist_is_named(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)

    async with Runtime(sqlite_url, allow_code=[module.parent]) as rt:
        with pytest.raises(TaskNotFound, match="nope"):
            await rt.replay_check(task_ids=["done-1", "nope"])
        [outcome] = await rt.replay_check(task_ids=["done-1"])
    assert outcome.ok


async def test_no_model_is_asked_neither_for_a_replay_nor_at_the_frontier(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = tmp_path / "team.py"
    team.write_text(TEAM, encoding="utf-8")
    with LoopbackServer() as server:  # an OpenAI-compatible model server on loopback, answering once
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        server.answer(Reply(completion("hi")))
        async with Runtime(sqlite_url, allow_code=[tmp_path]) as rt:
            answered = await rt.run(f"{team}:asks", model="openai:test-model", task_id="answered")
            await rt.submit(f"{team}:asks", model="openai:test-model", task_id="unasked")
            asked = len(server.received)
            outcomes = by_task(await rt.replay_check(ALL_TASKS))

        assert (answered.status, answered.result, asked) == ("completed", "hi", 1)
        assert outcomes["answered"].ok and outcomes["answered"].replayed == 1
        assert outcomes["unasked"].ok and outcomes["unasked"].replayed == 0  # its call was the frontier
        assert len(server.received) == 1  # the run's own request; the checks sent none


async def test_a_task_whose_record_cannot_be_read_is_a_problem_and_the_others_are_checked(
    sqlite_url: str, module: Path
) -> None:
    await record_runs(sqlite_url, module)
    change_task_record(sqlite_url, "asking-1", lambda record: record.update(status="lost"))

    async with Runtime(sqlite_url, allow_code=[module.parent]) as rt:
        outcomes = by_task(await rt.replay_check(ALL_TASKS))

    assert outcomes["asking-1"].problem is not None and "task asking-1" in outcomes["asking-1"].problem
    assert [task for task, outcome in outcomes.items() if not outcome.ok] == ["asking-1"]


# --------------------------------------------------------------------------- the pytest helper


async def test_assert_replays_lists_every_divergence(sqlite_url: str, module: Path) -> None:
    await record_runs(sqlite_url, module)

    here = [module.parent]
    passed = await assert_replays_async(sqlite_url, allow_code=here)
    with pytest.raises(AssertionError) as failed:
        await assert_replays_async(sqlite_url, allow_code=here, load=installed(module, "reordered"))
    narrowed = await assert_replays_async(
        sqlite_url, allow_code=here, load=installed(module, "reordered"), status="queued"
    )

    assert len(passed) == 5
    lines = str(failed.value).splitlines()
    assert lines[0] == "4 of 5 stored tasks do not replay with the code installed now:"
    assert sorted(line.split(",")[0].strip() for line in lines[1:]) == [
        "task asking-1",
        "task asking-2",
        "task done-1",
        "task done-2",
    ]
    said = "operation 1: recorded tool charge, the code now asks for tool ship"
    assert all(said in line for line in lines[1:])
    assert [outcome.task_id for outcome in narrowed] == ["queued"]


def test_assert_replays_from_plain_test_code(tmp_path: Path, module: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    asyncio.run(record_runs(url, module))

    outcomes = assert_replays(url, allow_code=[module.parent])

    assert len(outcomes) == 5
    with pytest.raises(AssertionError, match="operation 1: recorded tool charge"):
        assert_replays(url, allow_code=[module.parent], load=installed(module, "reordered"))
