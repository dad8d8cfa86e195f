"""Failing fast from the CLI: a model the server does not know ends the task at its first request."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..helpers.loopback import LoopbackServer, Reply
from .test_openai_compat import error_body
from .test_registry import ratchet_cli


def test_a_model_the_server_rejects_fails_the_task_at_its_first_request(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.answer(Reply(error_body("The model `gpt-nope` does not exist", "model_not_found"), status=404))
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")

    done = ratchet_cli(tmp_path, "run", "hello", "--model", "openai:gpt-nope", "--store", "memory://")

    assert done.returncode == 1
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert errors == [
        "error: model:plan (operation 0) failed: ModelError: openai:gpt-nope: the server has no model "
        "'gpt-nope' (HTTP 404: The model `gpt-nope` does not exist); check the model name"
    ]
    assert len(server.received) == 1, "not retried"
    assert server.last.path == "/v1/chat/completions"
