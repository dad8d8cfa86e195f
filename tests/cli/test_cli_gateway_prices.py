"""A run through a gateway no price table knows, as real programs: priced with ``priced_as``, held
by ``--max-cost``; without it, one warning that names the URL and the fix.

The gateway is a real HTTP server on loopback speaking OpenAI's chat-completions
protocol (`LoopbackServer`), at a URL no price table knows; the prices come from
genai-prices' bundled table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`)
import pytest

from ratchet.pricing import cost_of
from ratchet.providers import Usage

from ..agent.test_openai_agent import PLAN
from ..helpers.cli import RunRatchet, assert_one_line_error, ratchet_env
from ..helpers.loopback import LoopbackServer, chat_completion

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


def _a_whole_run(server: LoopbackServer) -> None:
    server.answer(
        chat_completion(json.dumps(PLAN), model="gpt-4o", usage=USAGE),
        chat_completion("X is degraded", model="gpt-4o", usage=USAGE),
        chat_completion(json.dumps({"passed": True, "reason": "status read"}), model="gpt-4o", usage=USAGE),
    )


def _one_call() -> float:
    cost = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert cost is not None and cost > 0
    return cost


@pytest.fixture
def gateway() -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        yield server


def _env(**extra: str) -> dict[str, str]:
    env = ratchet_env(NO_PROXY="127.0.0.1,localhost", **extra)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RATCHET_PRICED_AS"):
        env.pop(name, None)
    return {**env, **extra}


def _config(directory: Path, gateway: LoopbackServer, *, priced_as: str | None) -> None:
    line = f'priced_as = "{priced_as}"\n' if priced_as else ""
    (directory / "ratchet.toml").write_text(
        f'[endpoints.gw]\nprovider = "openai"\nbase_url = "{gateway.url}/v1"\n{line}'
    )


def _run(run_ratchet: RunRatchet, url: str, model: str, *options: str, **env: str) -> dict[str, Any]:
    done = run_ratchet(
        "run", "check X", "--model", model, *options, "--json", "--store", url, env=_env(**env)
    )
    assert "Traceback" not in done.stderr, done.stderr
    ran: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return ran


def test_a_gateway_with_priced_as_is_priced_and_stopped_by_max_cost(
    run_ratchet: RunRatchet, tmp_path: Path, gateway: LoopbackServer
) -> None:
    _config(tmp_path, gateway, priced_as="openai:gpt-4o")
    _a_whole_run(gateway)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"

    ran = _run(run_ratchet, url, "gw:gpt-4o", "--max-cost", repr(1.5 * _one_call()))

    assert ran["status"] == "failed", ran
    assert "budget exceeded (max_cost" in ran["error"]
    assert ran["usage"]["cost"] == pytest.approx(2 * _one_call())  # priced, and stopped after the 2nd call
    assert len(gateway.received) == 2
    assert {r.path for r in gateway.received} == {"/v1/chat/completions"}
    events = run_ratchet("events", ran["task_id"], "--store", url, env=_env())
    assert "no price is known" not in events.stdout


def test_priced_as_on_the_command_line_prices_a_gateway_named_by_openai_base_url(
    run_ratchet: RunRatchet, tmp_path: Path, gateway: LoopbackServer
) -> None:
    _a_whole_run(gateway)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"

    ran = _run(
        run_ratchet,
        url,
        "openai:gpt-4o",
        "--priced-as",
        "openai:gpt-4o",
        "--max-cost",
        repr(1.5 * _one_call()),
        OPENAI_BASE_URL=f"{gateway.url}/v1",
    )

    assert ran["status"] == "failed", ran
    assert "budget exceeded (max_cost" in ran["error"]
    assert ran["usage"]["cost"] == pytest.approx(2 * _one_call())


def test_without_priced_as_the_warning_names_the_url_and_the_fix_once(
    run_ratchet: RunRatchet, tmp_path: Path, gateway: LoopbackServer
) -> None:
    _config(tmp_path, gateway, priced_as=None)
    _a_whole_run(gateway)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"

    ran = _run(run_ratchet, url, "gw:gpt-4o", "--max-cost", repr(1.5 * _one_call()))

    assert ran["status"] == "completed", ran  # unpriced: --max-cost does not hold, and it says so
    assert ran["usage"]["cost"] == 0
    events = run_ratchet("events", ran["task_id"], "--store", url, env=_env())
    warnings = [line for line in events.stdout.splitlines() if "no price is known" in line]
    assert len(warnings) == 1, events.stdout
    [warning] = warnings
    assert f"gw:gpt-4o at {gateway.url}/v1" in warning
    assert 'set priced_as = "openai:gpt-4o" on its endpoint in ratchet.toml' in warning


@pytest.mark.parametrize(
    ("priced_as", "problem"),
    [
        ("openai:no-such-model-anywhere", "names a model no price table knows"),
        ("gpt-4o", "must be provider:name"),
    ],
)
def test_a_priced_as_no_table_prices_is_one_line_of_bad_input(
    run_ratchet: RunRatchet, tmp_path: Path, gateway: LoopbackServer, priced_as: str, problem: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    on_the_line = run_ratchet(
        "run", "check X", "--model", "gw:gpt-4o", "--priced-as", priced_as, "--store", url, env=_env()
    )
    assert_one_line_error(on_the_line, "--priced-as", problem)

    _config(tmp_path, gateway, priced_as=priced_as)
    in_the_file = run_ratchet("run", "check X", "--model", "gw:gpt-4o", "--store", url, env=_env())
    line = assert_one_line_error(in_the_file, "[endpoints.gw]", "priced_as")
    assert "provider:name" in line if priced_as == "gpt-4o" else problem in line
    assert not gateway.received
    assert not (tmp_path / "ratchet.db").exists()


def test_a_worker_given_priced_as_prices_the_submitted_task_it_runs(
    run_ratchet: RunRatchet, tmp_path: Path, gateway: LoopbackServer
) -> None:
    _a_whole_run(gateway)
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    env = _env(OPENAI_BASE_URL=f"{gateway.url}/v1")
    submitted = run_ratchet(
        "submit", "check X", "--model", "openai:gpt-4o", "--json", "--store", url, env=env
    )
    assert submitted.returncode == 0, submitted.stderr
    task_id = json.loads(submitted.stdout)["task_id"]

    worked = run_ratchet("worker", "--until-idle", "--priced-as", "openai:gpt-4o", "--store", url, env=env)

    assert worked.returncode == 0, worked.stderr
    shown = json.loads(run_ratchet("show", task_id, "--json", "--store", url, env=env).stdout)
    assert shown["task"]["status"] == "completed", shown
    assert shown["spend"]["cost"] == pytest.approx(3 * _one_call())
    assert shown["spend"]["unpriced_calls"] == 0
