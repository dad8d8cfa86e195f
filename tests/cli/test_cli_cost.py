"""`ratchet run --max-cost` and what `ratchet show` says a task spent, run as real programs on SQLite.

The scripted model declares its token counts and the model it is priced as
(``priced_as``); the costs come from genai-prices' bundled table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`)
import pytest

from ratchet.pricing import cost_of
from ratchet.providers import Usage

from ..helpers.cli import RunRatchet
from .run_support import plan

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


def _script(directory: Path, priced_as: str) -> str:
    answer = {"usage": USAGE}
    (directory / "script.json").write_text(
        json.dumps(
            {
                "priced_as": priced_as,
                "plan": [{**plan("a", "b", check="it is done"), **answer}],
                "act": [{"content": "done", **answer}] * 2,
                "verify": [{"content": {"passed": True, "reason": "ok"}, **answer}] * 2,
            }
        )
    )
    return "scripted:script.json"


def _one_call() -> float:
    cost = cost_of("openai", "gpt-4o", Usage.model_validate(USAGE))
    assert cost is not None
    return cost


def _dollars(amount: float) -> str:
    return "$" + f"{amount:,.6f}".rstrip("0").rstrip(".")


def _run(run_ratchet: RunRatchet, url: str, model: str, *options: str) -> dict[str, Any]:
    done = run_ratchet("run", "keep the ledger", "--model", model, *options, "--json", "--store", url)
    assert "Traceback" not in done.stderr, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return shown


def test_show_reports_the_cost_used_and_what_is_left_of_max_cost(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    ran = _run(run_ratchet, url, _script(tmp_path, "openai:gpt-4o"), "--max-cost", "1")
    assert ran["status"] == "completed", ran

    shown = run_ratchet("show", ran["task_id"], "--store", url)
    assert shown.returncode == 0, shown.stderr
    spent = 5 * _one_call()
    assert ran["usage"]["cost"] == pytest.approx(spent)
    line = next(line for line in shown.stdout.splitlines() if "spent" in line)
    assert f"{_dollars(spent)} of $1 ({_dollars(1 - spent)} left), 7,500 tokens" in line

    as_json = run_ratchet("show", ran["task_id"], "--json", "--store", url)
    assert json.loads(as_json.stdout)["spend"] == {
        "llm_tokens": 7500,
        "cost": pytest.approx(spent),
        "unpriced_calls": 0,
        "max_cost": 1.0,
        "cost_left": pytest.approx(1 - spent),
    }


def test_max_cost_fails_the_run_and_show_says_nothing_is_left(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    limit = 1.5 * _one_call()
    ran = _run(run_ratchet, url, _script(tmp_path, "openai:gpt-4o"), "--max-cost", repr(limit))

    assert ran["status"] == "failed"
    assert "budget exceeded (max_cost" in ran["error"]
    shown = run_ratchet("show", ran["task_id"], "--store", url)
    assert f"{_dollars(2 * _one_call())} of {_dollars(limit)} ($0 left)" in shown.stdout


def test_show_counts_the_calls_no_price_is_known_for(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    ran = _run(run_ratchet, url, _script(tmp_path, "openai:no-such-model-anywhere"))
    assert ran["status"] == "completed", ran

    shown = run_ratchet("show", ran["task_id"], "--store", url)
    assert "$0, 7,500 tokens; 5 model calls unpriced (not counted)" in shown.stdout
    events = run_ratchet("events", ran["task_id"], "--store", url)
    assert events.stdout.count("no price is known for openai:no-such-model-anywhere") == 1
