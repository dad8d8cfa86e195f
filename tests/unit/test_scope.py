"""Who may write a task: its owner; an agent it was granted to, but for giving it away; nobody else."""

from __future__ import annotations

import pytest

from ratchet.trust.scope import OWNER_ONLY, write_refusal

from ..helpers.builders import make_task

TASK = make_task("t1", agent="alice")


@pytest.mark.parametrize("action", ["patch it", "approve its call", "cancel it", *sorted(OWNER_ONLY)])
def test_the_owner_may_do_everything(action: str) -> None:
    assert write_refusal(TASK, "alice", (), action) is None


def test_a_granted_agent_may_write_but_not_give_the_task_away() -> None:
    assert write_refusal(TASK, "carol", {"carol"}, "patch it") is None
    refusal = write_refusal(TASK, "carol", {"carol"}, "hand it off")
    assert refusal == (
        "task t1 belongs to agent alice; agent carol was granted it and may write it, "
        "but only alice may hand it off"
    )


def test_another_agent_and_no_agent_are_told_why_and_what_to_do() -> None:
    assert write_refusal(TASK, "bob", {"carol"}, "patch it") == (
        "task t1 belongs to agent alice; agent bob may not patch it: ask alice to hand it off or grant it"
    )
    nobody = write_refusal(TASK, None, {"carol"}, "patch it")
    assert nobody is not None and "acts as no agent" in nobody and "ratchet mcp --agent ID" in nobody
