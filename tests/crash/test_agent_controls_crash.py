"""The model's controls under SIGKILL: a skipped step and a task the model completed, each taken once.

The script's run: step 1 restarts X; step 2 is skipped by the model
(``skip_step``); step 3 deploys v2 and the model ends the task
(``complete_task``). Results, in the order the journal commits them:
model:plan (1), model:act (2), restart_service (3), model:act (4),
model:verify (5), model:act asking skip_step (6), model:act (7), deploy (8),
model:act asking complete_task (9). ``after_result_commit@6`` kills the
worker once the skip is asked for and before it is recorded;
``after_result_commit@9`` once complete_task is asked for and before its
effect (the steps skipped, the event, the task's end) is recorded.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ratchet import TaskStatus

from ..helpers.scripts import calls, plan_step, say, verdict
from .harness import EXIT_COMPLETED, KILLED, STORE_KINDS, Stores, assert_no_duplicate_effects, finish_worker
from .test_agent_crash import Outcome, kill_while_running, new_agent_run, resume_until_done

SCRIPT: dict[str, Any] = {
    "plan": [
        {
            "content": {
                "goal": "X runs v2",
                "steps": [plan_step(n) for n in ("restart X", "look at X", "ship v2")],
            }
        }
    ],
    "act": [
        calls(("restart_service", {"service": "X"})),
        {**say("X restarted"), "delay": 0.1},
        calls(("skip_step", {"reason": "X looks fine after the restart"})),
        {**calls(("deploy", {"version": "v2"})), "delay": 0.1},
        calls(("complete_task", {"result": "v2 is live"})),
    ],
    "verify": [verdict(True)],
}
STEPS = (("restart X", "completed"), ("look at X", "skipped"), ("ship v2", "completed"))
CASES = ("after_result_commit@6", "after_result_commit@9", "after_intent_commit@2", "random-0", "random-1")


@dataclass(frozen=True)
class Killed:
    at_kill: Outcome
    final: Outcome


@pytest.fixture(scope="module")
def controls_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("controls-script") / "script.json"
    path.write_text(json.dumps(SCRIPT), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Reference:
    outcome: Outcome
    active: float  # seconds from the task's start to its end


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, controls_script: Path) -> Reference:
    """One uninterrupted run on SQLite."""
    with Stores("sqlite") as stores:
        run = new_agent_run(tmp_path_factory.mktemp("controls-reference"), controls_script, stores)
        assert finish_worker(run.worker()) == EXIT_COMPLETED
        outcome = run.outcome()
        active = run.active_seconds()
    assert (outcome.status, outcome.result, outcome.steps) == (TaskStatus.COMPLETED, "v2 is live", STEPS)
    assert outcome.loop_events["step_skipped"] == outcome.loop_events["task_completed_by_agent"] == 1
    return Reference(outcome, active)


@pytest.fixture(scope="module", params=STORE_KINDS)
def killed(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    controls_script: Path,
    reference: Reference,
) -> Iterator[dict[str, Killed | Exception]]:
    """Every case killed once and resumed until done, on each store kind."""
    root = tmp_path_factory.mktemp(f"controls-crash-{request.param}")
    stores = Stores(request.param)
    runs = {case: new_agent_run(root / case, controls_script, stores) for case in CASES}

    def one(case: str) -> Killed | Exception:
        run = runs[case]
        try:
            if case.startswith("random-"):
                after = random.Random(int(case.removeprefix("random-"))).uniform(0, reference.active)
                if kill_while_running(run, after) == EXIT_COMPLETED:  # it ended before the kill
                    return Killed(run.outcome(), run.outcome())
            else:
                code = finish_worker(run.worker(case))
                assert code == KILLED, f"RATCHET_CRASH_AT={case}: the worker exited {code}, not killed"
            at_kill = run.outcome()
            resume_until_done(run)
            return Killed(at_kill, run.outcome())
        except AssertionError as error:  # reported by the case's own test
            return error

    with stores, ThreadPoolExecutor(3) as pool:
        yield dict(zip(CASES, pool.map(one, CASES), strict=True))


def _case(killed: dict[str, Killed | Exception], case: str) -> Killed:
    result = killed[case]
    if isinstance(result, Exception):
        raise result
    return result


def test_the_kills_land_between_the_controls_answer_and_its_effect(
    killed: dict[str, Killed | Exception],
) -> None:
    skip = _case(killed, "after_result_commit@6").at_kill
    assert skip.journal[-1][2] == "model:act" and skip.loop_events["step_skipped"] == 0
    assert ("look at X", "current") in skip.steps
    end = _case(killed, "after_result_commit@9").at_kill
    assert end.journal[-1][2] == "model:act" and end.loop_events["task_completed_by_agent"] == 0
    assert end.status is TaskStatus.RUNNING


@pytest.mark.parametrize("case", CASES)
def test_each_control_takes_effect_once_after_a_kill(
    case: str, killed: dict[str, Killed | Exception], reference: Reference
) -> None:
    final, expected = _case(killed, case).final, reference.outcome
    assert (final.status, final.result, final.steps) == (TaskStatus.COMPLETED, "v2 is live", STEPS)
    assert final.journal == expected.journal
    assert final.messages == expected.messages
    assert final.loop_events == expected.loop_events  # step_skipped, task_completed_by_agent: once each
    assert_no_duplicate_effects(final.effects)
    assert set(final.effects) == set(expected.effects)
