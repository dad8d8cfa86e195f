"""Workers SIGKILLed at random moments; fresh workers (some killed again) finish the task.

Each seed kills the first worker at a moment uniform over an uninterrupted
run's duration (measured under the same load: `window`), then resumes until
the task completes; each resume is killed again with some chance, a bounded
number of times. A kill that catches the unkeyed
tool in flight leaves its call in doubt: the resume must stop at
``waiting(in_doubt)`` without calling it, and a person settles it from the
ledger (`harness.recover`). Runs are independent (own store, own ledger), so a
few go at once.
"""

from __future__ import annotations

import random
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .harness import EXIT_COMPLETED, KILLED, Recovery, Reference, assert_recovered, new_run, recover, work

SEEDS = 50
BATCHES = 5
AT_ONCE = 5  # runs in flight together: workers mostly wait on the scripted delays
KILL_AGAIN_CHANCE = 0.3
MAX_KILLS_AGAIN = 2


@pytest.fixture(scope="module")
def window(tmp_path_factory: pytest.TempPathFactory, script: Path, reference: Reference) -> float:
    """How long a worker takes, start to end, with `AT_ONCE` running: kills are drawn from this.

    Measured on uninterrupted runs under the load the killed runs see (a
    worker among five is slower than one alone), each checked against the
    reference.
    """
    root = tmp_path_factory.mktemp("crash-window")

    def uninterrupted(index: int) -> float:
        run = new_run(root / f"run-{index}", script)
        started = time.monotonic()
        assert work(run) == EXIT_COMPLETED
        elapsed = time.monotonic() - started
        assert_recovered(run, reference, Recovery())
        return elapsed

    with ThreadPoolExecutor(AT_ONCE) as pool:
        durations = list(pool.map(uninterrupted, range(AT_ONCE)))
    return sum(durations) / len(durations)


def killed_run(seed: int, root: Path, script: Path, reference: Reference, window: float) -> tuple[bool, Recovery]:
    """Kill, recover and check one run; return whether the first kill landed, and the recovery."""
    rng = random.Random(seed)
    run = new_run(root / f"seed-{seed}", script)
    landed = work(run, kill_after=rng.uniform(0, window)) == KILLED
    recovery = recover(run, rng=rng, kill_chance=KILL_AGAIN_CHANCE, max_kills=MAX_KILLS_AGAIN, window=window)
    assert_recovered(run, reference, recovery)
    return landed, recovery


@pytest.mark.parametrize("batch", range(BATCHES))
def test_random_kills_recover(
    batch: int, reference: Reference, window: float, script: Path, tmp_path: Path
) -> None:
    seeds = range(batch, SEEDS, BATCHES)

    def attempt(seed: int) -> tuple[bool, Recovery] | str:
        try:
            return killed_run(seed, tmp_path, script, reference, window)
        except AssertionError as failure:
            return f"seed {seed}: {failure}"
        except Exception:
            return f"seed {seed}: {traceback.format_exc()}"

    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(attempt, seeds))

    failures = [outcome for outcome in outcomes if isinstance(outcome, str)]
    assert not failures, "\n\n".join(failures)
    landed = sum(first for first, _ in outcomes)  # type: ignore[misc]
    in_doubt = sum(bool(recovery.in_doubt) for _, recovery in outcomes)  # type: ignore[misc]
    print(f"batch {batch}: {landed}/{len(outcomes)} first kills landed, {in_doubt} in doubt")
    # A kill drawn from the worker's whole lifetime lands almost always; none would mean no test.
    assert landed >= len(outcomes) // 2
