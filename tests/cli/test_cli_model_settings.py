"""The model settings' options of `run` and `submit` (`--temperature` ...), as real programs."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ratchet import ModelSettings
from ratchet.agent.spec import AgentSpec

from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_env
from ..helpers.loopback import LoopbackServer, chat_completion
from .task_support import stored_task

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
TOOLS = HELPERS / "failover_tools.py"
LOCAL = "openai:local-model"
SETTINGS = ["--temperature", "0.2", "--max-output-tokens", "300", "--seed", "42", "--reasoning-effort", "low"]


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


def local_server_env(base_url: str = "http://127.0.0.1:9/v1") -> dict[str, str]:
    """An OpenAI-compatible server that is not OpenAI's: no key needed to build the provider."""
    return ratchet_env(OPENAI_BASE_URL=base_url, NO_PROXY="127.0.0.1,localhost", OPENAI_API_KEY="")


def test_submit_records_the_settings_in_the_agent_spec(run_ratchet: RunRatchet, url: str) -> None:
    done = run_ratchet(
        "submit", "record it", "--model", "openai:local-model", "--tools", str(TOOLS), *SETTINGS,
        "--json", "--store", url, env=local_server_env(),
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    task = stored_task(url, json.loads(done.stdout)["task_id"])
    assert AgentSpec.model_validate(task.inputs_params["agent"]).model_settings == ModelSettings(
        temperature=0.2, max_output_tokens=300, seed=42, reasoning_effort="low"
    )


PLAN = {
    "goal": "say hello",
    "steps": [
        {
            "step_name": "greet",
            "description": "say hello",
            "action_instruction": "answer hello",
            "validation_instruction": "",
        }
    ],
}


def test_run_sends_the_settings_with_every_request(run_ratchet: RunRatchet, url: str) -> None:
    with LoopbackServer() as server:
        server.answer(
            chat_completion(json.dumps(PLAN), model="local-model"),
            chat_completion("hello", model="local-model"),
        )
        done = run_ratchet(
            "run", "say hello", "--model", "openai:local-model", *SETTINGS, "--json", "--store", url,
            env=local_server_env(f"{server.url}/v1"),
        )  # fmt: skip

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"
    assert [r.body["model"] for r in server.received] == ["local-model", "local-model"]
    for received in server.received:
        sent = {
            key: received.body.get(key) for key in ("temperature", "max_tokens", "seed", "reasoning_effort")
        }
        assert sent == {"temperature": 0.2, "max_tokens": 300, "seed": 42, "reasoning_effort": "low"}


@pytest.mark.parametrize(
    ("command", "model", "options", "said"),
    [
        (
            "submit",
            LOCAL,
            ["--temperature", "2.5"],
            "--temperature 2.5: Input should be less than or equal to 2",
        ),
        ("run", LOCAL, ["--max-output-tokens", "0"], "--max-output-tokens 0: Input should be greater than"),
        (
            "submit",
            LOCAL,
            ["--reasoning-effort", "max"],
            "--reasoning-effort max: Input should be 'low', 'medium'",
        ),
        ("run", LOCAL, ["--seed", str(2**64)], "--seed 18446744073709551616: Input should be less than"),
        ("run", "anthropic:claude-x", ["--seed", "1"], "anthropic:claude-x takes no seed"),
        ("submit", "anthropic:claude-x", ["--temperature", "0"], "anthropic:claude-x takes no temperature"),
    ],
    ids=["temperature", "max-output-tokens", "reasoning-effort", "seed", "no-seed", "no-temperature"],
)
def test_a_bad_or_unsupported_setting_is_one_line_and_stores_nothing(
    run_ratchet: RunRatchet, url: str, tmp_path: Path, command: str, model: str, options: list[str], said: str
) -> None:
    database = tmp_path / "ratchet.db"
    run_ratchet("migrate", "--store", url)
    before = hashlib.sha256(database.read_bytes()).hexdigest()

    done = run_ratchet(
        command, "say hello", "--model", model, *options, "--store", url, env=local_server_env()
    )

    assert_one_line_error(done, said)
    assert hashlib.sha256(database.read_bytes()).hexdigest() == before
