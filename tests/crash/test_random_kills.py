"""Workers SIGKILLed at random moments; fresh workers (some killed again) finish the task.

Each seed kills the first worker at a moment uniform over an uninterrupted
run's duration (measured under the same load: `window`), then resumes until
the task completes; each resume is killed again with some chance, a bounded
number of times. A kill that catches the unkeyed
tool in flight leaves its call in doubt: the resume must stop at
``waiting(in_doubt)`` without calling it, and a person settles it from the
ledger (`harness.recover`). Runs are independent (own store, own ledger), so a
few go at once. Every batch runs on SQLite; PostgreSQL runs the first
`POSTGRES_BATCHES` (its own share of the seeds), keeping the suite's time modest.
"""

from __future__ import annotations

import random
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .harness import (
    EXIT_COMPLETED,
    KILLED,
    Recovery,
    Reference,
    Stores,
    assert_recovered,
    new_run,
    recover,
    work,
)

SEEDS = 50
BATCHES = 5
AT_ONCE = 5  # runs in flight together: workers mostly wait on the scripted delays
KILL_AGAIN_CHANCE = 0.3
MAX_KILLS_AGAIN = 2
KILL_SHARE = 0.8  # first kills are drawn from this share of the measured window
POSTGRES_BATCHES = 1
BATCHES_BY_STORE = [("sqlite", b) for b in range(BATCHES)] + [
    ("postgres", b) for b in range(POSTGRES_BATCHES)
]


class Windows:
    """How long a worker takes, start to end, with `AT_ONCE` running: kills are drawn from this.

    Measured once per kind of store, on uninterrupted runs under the load the
    killed runs see (a worker among five is slower than one alone), each
    checked against the reference.
    """

    def __init__(self, root: Path, script: Path, reference: Reference) -> None:
        self._root = root
        self._script = script
        self._reference = reference
        self._measured: dict[str, float] = {}

    def of(self, kind: str) -> float:
        if kind not in self._measured:
            self._measured[kind] = self._measure(kind)
        return self._measured[kind]

    def _measure(self, kind: str) -> float:
        with Stores(kind) as stores, ThreadPoolExecutor(AT_ONCE) as pool:
            durations = list(pool.map(lambda index: self._uninterrupted(stores, index), range(AT_ONCE)))
        return sum(durations) / len(durations)

    def _uninterrupted(self, stores: Stores, index: int) -> float:
        run = new_run(self._root / f"{stores.kind}-{index}", self._script, stores)
        started = time.monotonic()
        assert work(run) == EXIT_COMPLETED
        elapsed = time.monotonic() - started
        assert_recovered(run, self._reference, Recovery())
        return elapsed


@pytest.fixture(scope="module")
def windows(tmp_path_factory: pytest.TempPathFactory, order_script: Path, reference: Reference) -> Windows:
    return Windows(tmp_path_factory.mktemp("crash-window"), order_script, reference)


def killed_run(
    seed: int, root: Path, script: Path, stores: Stores, reference: Reference, window: float
) -> tuple[bool, Recovery]:
    """Kill, recover and check one run; return whether the first kill landed, and the recovery."""
    rng = random.Random(seed)
    run = new_run(root / f"seed-{seed}", script, stores)
    # The window is measured once, and the machine's load changes meanwhile (other suites, other
    # processes): drawing from most of it, not all, keeps most kills inside a run that got faster.
    landed = work(run, kill_after=rng.uniform(0, KILL_SHARE * window)) == KILLED
    recovery = recover(run, rng=rng, kill_chance=KILL_AGAIN_CHANCE, max_kills=MAX_KILLS_AGAIN, window=window)
    assert_recovered(run, reference, recovery)
    return landed, recovery


@pytest.mark.parametrize(("stores", "batch"), BATCHES_BY_STORE, indirect=["stores"])
def test_random_kills_recover(
    stores: Stores, batch: int, reference: Reference, windows: Windows, order_script: Path, tmp_path: Path
) -> None:
    seeds = range(batch, SEEDS, BATCHES)
    window = windows.of(stores.kind)

    def attempt(seed: int) -> tuple[bool, Recovery] | str:
        try:
            return killed_run(seed, tmp_path, order_script, stores, reference, window)
        except AssertionError as failure:
            return f"seed {seed}: {failure}"
        except Exception:
            return f"seed {seed}: {traceback.format_exc()}"

    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(attempt, seeds))

    failures = [outcome for outcome in outcomes if isinstance(outcome, str)]
    assert not failures, "\n\n".join(failures)
    finished = [outcome for outcome in outcomes if not isinstance(outcome, str)]
    landed = sum(first for first, _ in finished)
    in_doubt = sum(bool(recovery.in_doubt) for _, recovery in finished)
    print(f"batch {batch}: {landed}/{len(outcomes)} first kills landed, {in_doubt} in doubt")
    # A kill drawn from the worker's lifetime lands almost always on a steady machine; under a load
    # that fell since the window was measured, fewer do. None landing would mean no test.
    assert landed >= max(1, len(outcomes) // 4)
