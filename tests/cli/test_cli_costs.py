"""What tasks cost, as people read it: the cost column of `ratchet tasks`, and `ratchet costs`'
totals by day, agent and model; run as real programs on SQLite.

The scripted model declares its token counts and the model it is priced as
(``priced_as``); the costs come from genai-prices' bundled table.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import genai_prices  # noqa: F401  # the `prices` extra (in `test`)
import pytest

from ratchet.pricing import cost_of
from ratchet.providers import Usage
from ratchet.records import utcnow

from ..helpers.cli import RunRatchet, assert_one_line_error
from .run_support import plan

USAGE = {"prompt_tokens": 1000, "completion_tokens": 500}


def _script(directory: Path, name: str, priced_as: str | None) -> str:
    answer = {"usage": USAGE}
    script: dict[str, Any] = {
        "plan": [{**plan("a", check="it is done"), **answer}],
        "act": [{"content": "done", **answer}],
        "verify": [{"content": {"passed": True, "reason": "ok"}, **answer}],
    }
    if priced_as is not None:
        script["priced_as"] = priced_as
    (directory / name).write_text(json.dumps(script))
    return f"scripted:{name}"


def _price(model: str) -> float:
    cost = cost_of("openai", model, Usage.model_validate(USAGE))
    assert cost is not None
    return cost


def _run(run_ratchet: RunRatchet, url: str, model: str, name: str) -> str:
    done = run_ratchet("run", "keep the ledger", "--model", model, "--name", name, "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    ran: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert ran["status"] == "completed", ran
    return str(ran["task_id"])


@pytest.fixture
def three_runs(run_ratchet: RunRatchet, tmp_path: Path) -> tuple[str, dict[str, str]]:
    """Three agent tasks, three calls each: priced as gpt-4o, as gpt-4o-mini, and unpriced."""
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    ids = {
        "big": _run(run_ratchet, url, _script(tmp_path, "big.json", "openai:gpt-4o"), "big"),
        "small": _run(run_ratchet, url, _script(tmp_path, "small.json", "openai:gpt-4o-mini"), "small"),
        "free": _run(run_ratchet, url, _script(tmp_path, "free.json", None), "free"),
    }
    return url, ids


def test_tasks_shows_what_each_task_cost_and_sorts_by_it(
    run_ratchet: RunRatchet, three_runs: tuple[str, dict[str, str]]
) -> None:
    url, ids = three_runs

    listed = run_ratchet("tasks", "--sort", "-cost", "--store", url)

    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "cost" in lines[0]
    rows = {name: next(line for line in lines if task_id in line) for name, task_id in ids.items()}
    assert f"${3 * _price('gpt-4o'):,.6f}".rstrip("0") in rows["big"]
    assert f"${3 * _price('gpt-4o-mini'):,.6f}".rstrip("0") in rows["small"]
    assert " - " in rows["free"]
    assert [lines.index(rows[name]) for name in ("big", "small", "free")] == sorted(
        lines.index(row) for row in rows.values()
    )


def test_costs_adds_calls_up_by_day_agent_and_model_with_the_total(
    run_ratchet: RunRatchet, three_runs: tuple[str, dict[str, str]]
) -> None:
    url, _ = three_runs
    now = utcnow()

    done = run_ratchet("costs", "--since", "1d", "--json", "--store", url)

    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    today = report["rows"][0]["day"]  # the runs' UTC day: today, or yesterday if midnight passed since
    assert today in {now.date().isoformat(), (now - dt.timedelta(days=1)).date().isoformat()}
    big, small = 3 * _price("gpt-4o"), 3 * _price("gpt-4o-mini")
    assert report["by"] == ["day", "agent", "model"]
    assert [
        (r["day"], r["agent"], r["model"].split(":")[1], r["calls"], r["unpriced_calls"])
        for r in report["rows"]
    ] == [
        (today, "agent", "big.json", 3, 0),
        (today, "agent", "free.json", 3, 0),  # a script that declares no price costs nothing: $0, priced
        (today, "agent", "small.json", 3, 0),
    ]
    assert [r["cost"] for r in report["rows"]] == [pytest.approx(big), 0, pytest.approx(small)]
    assert report["total"] == {
        "calls": 9,
        "unpriced_calls": 0,
        "llm_tokens": 9 * 1500,
        "cost": pytest.approx(big + small),
    }

    by_agent = json.loads(run_ratchet("costs", "--by", "agent", "--json", "--store", url).stdout)
    assert [(r["agent"], r["calls"], r["cost"]) for r in by_agent["rows"]] == [
        ("agent", 9, pytest.approx(big + small))
    ]
    one_model = report["rows"][0]["model"]
    only = json.loads(run_ratchet("costs", "--model", one_model, "--json", "--store", url).stdout)
    assert only["total"]["cost"] == pytest.approx(big)
    assert json.loads(run_ratchet("costs", "--until", "1d", "--json", "--store", url).stdout)["rows"] == []

    table = run_ratchet("costs", "--by", "day", "--store", url)
    assert table.returncode == 0, table.stderr
    [day_line] = [line for line in table.stdout.splitlines() if line.startswith(today)]
    assert day_line.split()[1:4] == ["9", "-", "13,500"]
    assert table.stdout.splitlines()[-1].split()[0] == "total"


def test_costs_of_a_store_that_does_not_exist_is_nothing(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'none.db'}"
    done = run_ratchet("costs", "--json", "--store", url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] == {"calls": 0, "unpriced_calls": 0, "llm_tokens": 0, "cost": 0.0}
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (("--by", "week"), "--by: 'week' is not a column; give day, agent or model"),
        (("--since", "yesterday"), "--since: 'yesterday' is neither a time"),
        (("--since", "1d", "--until", "2d"), "must be before --until"),
    ],
)
def test_costs_refuses_bad_options_in_one_line(
    run_ratchet: RunRatchet, tmp_path: Path, options: tuple[str, ...], expected: str
) -> None:
    done = run_ratchet("costs", *options, "--store", f"sqlite:///{tmp_path / 'ratchet.db'}")
    assert_one_line_error(done, expected)
