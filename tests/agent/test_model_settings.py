"""An agent's model settings: checked when it is made, recorded with its task, sent again after a restart."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ratchet import Agent, InputError, ModelSettings, Runtime
from ratchet.records import TaskStatus, WaitReason
from ratchet.store import StateStore, open_store

from ..helpers.scripts import calls, plan, say
from .support import make_agent, model_ops, run_agent

REPO = Path(__file__).resolve().parents[2]
SETTINGS = ModelSettings(temperature=0.4, max_output_tokens=700, seed=5, reasoning_effort="high")


def _resume_in_a_new_process(url: str, task_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ratchet", "resume", task_id, "--store", url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_agent_takes_its_settings_as_a_record_or_a_dict() -> None:
    assert Agent(model_settings=SETTINGS).spec.model_settings == SETTINGS
    assert Agent(model_settings={"seed": 5, "temperature": None}).spec.model_settings == ModelSettings(seed=5)
    assert Agent().spec.model_settings is None


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"temperature": 3}, "model settings: temperature: Input should be less than or equal to 2"),
        (
            {"max_output_tokens": 0},
            "model settings: max_output_tokens: Input should be greater than or equal to 1",
        ),
        ({"effort": "high"}, "model settings: effort: Extra inputs are not permitted"),
    ],
)
def test_a_bad_setting_is_one_line_when_the_agent_is_made(given: dict[str, Any], said: str) -> None:
    with pytest.raises(InputError) as raised:
        Agent(model_settings=given)
    assert str(raised.value) == said


async def test_the_settings_go_with_the_requests_made_after_a_restart(
    store_url: str, store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("deploy X", check="")],
                "act": [calls(("ask_user", {"question": "Which region?"})), say("deployed X")],
            }
        )
    )
    agent.spec = agent.spec.model_copy(update={"model_settings": SETTINGS})
    waiting = await run_agent(Runtime(store), agent)
    assert (waiting.status, waiting.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT), waiting.error
    await store.close()  # the process that made the task is gone: the next one rebuilds the agent

    async with Runtime(store_url) as rt:
        await rt.answer(waiting.id, "eu-west-1")
    done = _resume_in_a_new_process(store_url, waiting.id)
    assert done.returncode == 0, (done.stdout, done.stderr)

    async with await open_store(store_url) as reopened:
        task = await reopened.get_task(waiting.id)
        assert task.status is TaskStatus.COMPLETED, task.error
        recorded = SETTINGS.model_dump(mode="json")
        (planned,) = await model_ops(reopened, task.id, "plan")
        before, after = await model_ops(reopened, task.id, "act")
        # The plan and the first act were made before the restart; the second act by the new process.
        assert planned.input["settings"] == before.input["settings"] == after.input["settings"] == recorded
