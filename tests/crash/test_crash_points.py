"""A worker killed with SIGKILL at each named crash point; fresh workers finish the task.

Every case runs on SQLite and on PostgreSQL, each run in a store of its own,
and must end as the uninterrupted reference run (on SQLite) did.

Pass counts (``NAME@N``) are per process and follow `order_flow`'s program
order in the first worker, which runs up to the durable sleep: intents are
book_shipment (1), charge_card (2), send_notice's two attempts (3, 4) and
append_audit (5); results are model:plan (1), the three parallel tools (2-4,
in any order), model:act (5), charge_card (6), send_notice (7) and
append_audit (8); model requests are plan's two attempts (1, 2) and act (3);
backoffs are model:plan's (1) and send_notice's (2); the sleep is the one
sleep (1).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ratchet.engine.faults import CRASH_POINTS
from ratchet.records import OpStatus, TaskStatus, WaitReason

from .flows import REPEATABLE_TOOLS, UNKEYED_TOOL, order_flow
from .harness import (
    Reference,
    Run,
    Snapshot,
    Stores,
    assert_all_steps_completed,
    assert_no_duplicate_effects,
    assert_recovered,
    crash_worker,
    new_run,
    recover,
    recover_with_pool_worker,
)

RETRY_PENDING = "retry pending"  # a failed attempt with the next one's time committed


@dataclass(frozen=True)
class CrashCase:
    """Where the worker dies, and what the journal and the ledger hold then.

    Attributes:
        spec: the RATCHET_CRASH_AT value.
        op: the operation caught by the crash.
        journal: its record at the kill: an `OpStatus`, `RETRY_PENDING`, or
            None for no record.
        ran: whether the tool's effect is in the ledger at the kill (None: not a tool).
        in_doubt: the resume must stop at ``waiting(in_doubt)`` for a person.
    """

    spec: str
    op: str
    journal: OpStatus | str | None
    ran: bool | None = None
    attempt: int | None = None
    in_doubt: bool = False
    waiting_on: WaitReason | None = None

    def check_kill(self, run: Run, snap: Snapshot) -> None:
        op = snap.op(self.op)
        if self.journal is None:
            assert op is None, f"{self.op} was recorded before the kill: {op}"
        else:
            assert op is not None, f"{self.op} has no record at the kill"
            status = RETRY_PENDING if op.retry_pending else op.status
            assert status == self.journal, f"{self.op} is {status} at the kill, not {self.journal}"
            assert op.seq == max(o.seq for o in snap.ops), f"{self.op} is not the newest operation"
            if self.attempt is not None:
                assert op.attempt == self.attempt
        if self.ran is not None:
            assert any(tool == self.op for tool, _ in run.ledger.effects()) is self.ran
        assert snap.waiting_on is self.waiting_on


CASES = [
    CrashCase("after_intent_commit@1", "book_shipment", OpStatus.STARTED, ran=False),
    CrashCase("after_intent_commit@2", "charge_card", OpStatus.STARTED, ran=False),
    CrashCase("after_intent_commit@3", "send_notice", OpStatus.STARTED, ran=False, attempt=1),
    CrashCase("after_intent_commit@4", "send_notice", OpStatus.STARTED, ran=False, attempt=2),
    CrashCase("after_intent_commit@5", UNKEYED_TOOL, OpStatus.STARTED, ran=False, in_doubt=True),
    CrashCase("before_result_commit@1", "model:plan", RETRY_PENDING),
    CrashCase("before_result_commit@5", "model:act", None),
    CrashCase("before_result_commit@6", "charge_card", OpStatus.STARTED, ran=True),
    CrashCase("before_result_commit@7", "send_notice", OpStatus.STARTED, ran=True, attempt=2),
    CrashCase("before_result_commit@8", UNKEYED_TOOL, OpStatus.STARTED, ran=True, in_doubt=True),
    CrashCase("after_result_commit@1", "model:plan", OpStatus.SUCCEEDED),
    CrashCase("after_result_commit@6", "charge_card", OpStatus.SUCCEEDED, ran=True),
    CrashCase("after_result_commit@8", UNKEYED_TOOL, OpStatus.SUCCEEDED, ran=True),
    CrashCase("during_model_call@1", "model:plan", None),
    CrashCase("during_model_call@2", "model:plan", RETRY_PENDING),
    CrashCase("during_model_call@3", "model:act", None),
    CrashCase("during_backoff@1", "model:plan", RETRY_PENDING),
    CrashCase("during_backoff@2", "send_notice", RETRY_PENDING, ran=False, attempt=1),
    CrashCase("during_sleep@1", "sleep", OpStatus.SUCCEEDED, waiting_on=WaitReason.TIMER),
]


# order_flow receives no message: test_message_crash.py kills a worker at this one.
EXERCISED_ELSEWHERE = {"after_receive_commit"}


def test_every_crash_point_is_exercised() -> None:
    assert {case.spec.partition("@")[0] for case in CASES} | EXERCISED_ELSEWHERE == set(CRASH_POINTS)


def test_only_the_unkeyed_tool_is_unsafe_to_repeat() -> None:
    declared = {name for name, tool in order_flow.tools.items() if tool.safe_to_repeat or tool.takes_key}
    assert declared == REPEATABLE_TOOLS
    assert set(order_flow.tools) - declared == {UNKEYED_TOOL}


@pytest.mark.parametrize("case", CASES, ids=[case.spec for case in CASES])
def test_killed_at_crash_point_recovers(
    case: CrashCase, stores: Stores, reference: Reference, order_script: Path, tmp_path: Path
) -> None:
    run = new_run(tmp_path, order_script, stores)
    case.check_kill(run, crash_worker(run, case.spec))

    recovery = recover(run)

    assert recovery.in_doubt == ([reference.audit_seq] if case.in_doubt else [])
    assert_recovered(run, reference, recovery)


def test_in_doubt_call_skipped_by_a_person(
    stores: Stores, reference: Reference, order_script: Path, tmp_path: Path
) -> None:
    run = new_run(tmp_path, order_script, stores)
    crash_worker(run, "after_intent_commit@5")

    recovery = recover(run, decide="skip")

    final = run.snapshot()
    assert final.status is TaskStatus.COMPLETED
    assert recovery.in_doubt == [reference.audit_seq]
    assert_all_steps_completed(final)
    assert final.journal == reference.final.journal
    assert final.result == {**reference.final.result, "audit": None}
    effects = run.ledger.effects()
    assert_no_duplicate_effects(effects)
    assert set(effects) == {key for key in reference.effects if key[0] != UNKEYED_TOOL}
    assert not [key for key in run.ledger.invocations() if key[0] == UNKEYED_TOOL]


@pytest.mark.parametrize(
    ("spec", "in_doubt"), [("after_intent_commit@2", False), ("before_result_commit@8", True)]
)
def test_running_worker_takes_over_a_killed_workers_task(
    spec: str, in_doubt: bool, stores: Stores, reference: Reference, order_script: Path, tmp_path: Path
) -> None:
    run = new_run(tmp_path, order_script, stores)
    crash_worker(run, spec)

    recovery = recover_with_pool_worker(run)

    assert recovery.in_doubt == ([reference.audit_seq] if in_doubt else [])
    assert_recovered(run, reference, recovery)
