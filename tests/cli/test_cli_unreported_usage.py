"""A run through a server whose stream carries no usage (llama.cpp's, llama-cpp-python's ignore
``stream_options.include_usage``), as a real program: the tokens are estimated, never a confident
zero, so ``priced_as`` prices the calls and ``--max-cost`` still stops the task.

The server is a real HTTP server on loopback streaming OpenAI's chat-completion
chunks (`LoopbackServer`) with a finish reason and no usage chunk.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import genai_prices  # noqa: F401  # the `prices` extra (in `test`)
import pytest

from ..agent.test_openai_agent import PLAN
from ..helpers.cli import RunRatchet, ratchet_env
from ..helpers.loopback import LoopbackServer, Reply
from ..providers.test_openai_streaming import text_stream

# A cap below what any one priced call costs: the first call's estimated tokens exceed it.
MAX_COST = "0.000001"


def test_a_server_that_streams_no_usage_is_priced_by_estimate_and_stopped_by_max_cost(
    run_ratchet: RunRatchet, tmp_path: Path
) -> None:
    with LoopbackServer() as server:
        (tmp_path / "ratchet.toml").write_text(
            f'[endpoints.llama]\nprovider = "openai"\nbase_url = "{server.url}/v1"\n'
            'priced_as = "openai:gpt-4o"\n'
        )
        plan = json.dumps(PLAN)
        server.answer(*(Reply(stream=text_stream(plan[:30], plan[30:], usage=False)) for _ in range(3)))
        url = f"sqlite:///{tmp_path / 'ratchet.db'}"
        env = ratchet_env(NO_PROXY="127.0.0.1,localhost")
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RATCHET_PRICED_AS"):
            env.pop(name, None)

        done = run_ratchet(
            "run",
            "check X",
            "--model",
            "llama:gemma3",
            "--max-cost",
            MAX_COST,
            "--json",
            "--store",
            url,
            env=env,
        )

        assert "Traceback" not in done.stderr, done.stderr
        ran = json.loads(done.stdout.splitlines()[-1])
        assert ran["status"] == "failed", ran
        assert "budget exceeded (max_cost" in ran["error"]
        assert ran["usage"]["cost"] > 0  # priced as gpt-4o on estimated tokens, not $0
        assert len(server.received) == 1  # stopped after the first call
        assert server.received[0].body["stream"] is True
        assert server.received[0].body["stream_options"] == {"include_usage": True}  # asked, not given
        # One line says so, naming the server: the counts are an estimate.
        warned = [line for line in done.stderr.splitlines() if "reports no token usage" in line]
        assert len(warned) == 1, done.stderr
        assert f"{server.url}/v1" in warned[0]
    with sqlite3.connect(tmp_path / "ratchet.db") as db:
        [(meta,)] = db.execute("SELECT meta FROM operations WHERE kind = 'model'").fetchall()
    usage = json.loads(meta)["usage"]
    assert usage["estimated"] is True
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert usage["cost"] == pytest.approx(ran["usage"]["cost"])
