"""The seal on a task's code references: what it covers, where its key comes from."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet.errors import CodeUnsealed, InputError
from ratchet.records import Task
from ratchet.trust.seal import KEY_ENV, KEY_FILE_ENV, SigningKey, default_key_file, sealed_inputs

KEY = SigningKey(b"k" * 32, "a test")


def agent_task(**changes: object) -> Task:
    fields: dict[str, object] = {
        "id": "t1",
        "name": "ops",
        "instruction": "look",
        "workflow": "ratchet.agent.loop:agent_loop",
        "model": "openai:gpt-4o-mini",
        "workspace": "/home/u/.local/state/ratchet/workspaces/t1",
        "inputs_params": {"agent": {"tool_sources": ["tools.py"], "mcp": []}, "service": "X"},
    }
    return Task.model_validate({**fields, **changes})


def test_a_sealed_task_checks_and_names_what_its_seal_covers() -> None:
    task = KEY.seal(agent_task(), ["agent"])

    assert task.seal is not None and task.seal.startswith("v1:agent:")
    assert KEY.check(task) == ("agent",)


@pytest.mark.parametrize(
    "change",
    [
        {"workflow": "tools.py:flow"},
        {"model": "scripted:/tmp/other.json"},
        {"fallback_models": ["scripted:/tmp/other.json"]},
        {"workspace": "/home/u/.local/state/ratchet/workspaces/other"},
        {"id": "t2"},
        {"inputs_params": {"agent": {"tool_sources": ["ratchet.__main__"], "mcp": []}, "service": "X"}},
        {"inputs_params": {"agent": {"tool_sources": ["tools.py"], "mcp": [{"command": "sh"}]}}},
    ],
    ids=["workflow", "model", "fallback models", "workspace", "another row", "tool sources", "mcp servers"],
)
def test_a_change_to_a_code_reference_breaks_the_seal(change: dict[str, object]) -> None:
    forged = KEY.seal(agent_task(), ["agent"]).model_copy(update=change)

    with pytest.raises(CodeUnsealed, match="do not match their seal"):
        KEY.check(forged)


def test_a_chain_s_fallback_models_are_sealed_and_a_change_to_them_breaks_it() -> None:
    chained = KEY.seal(agent_task(fallback_models=["openai:gpt-4o"]), ["agent"])

    assert KEY.check(chained) == ("agent",)
    for forged in (["scripted:/tmp/other.json"], []):
        with pytest.raises(CodeUnsealed, match="do not match their seal"):
            KEY.check(chained.model_copy(update={"fallback_models": forged}))


def test_inputs_that_name_no_code_and_the_order_of_keys_do_not_matter() -> None:
    sealed = KEY.seal(agent_task(), ["agent"])
    agent = dict(reversed(list(sealed.inputs_params["agent"].items())))  # type: ignore[union-attr]
    changed = sealed.model_copy(update={"inputs_params": {"agent": agent, "service": "Y", "planned": 1}})

    assert KEY.check(changed) == ("agent",)


def test_an_input_the_seal_covers_cannot_be_added_later() -> None:
    sealed = KEY.seal(agent_task(inputs_params={"session": "s"}), ["session", "tools"])
    added = sealed.model_copy(update={"inputs_params": {"session": "s", "tools": ["evil.py"]}})

    with pytest.raises(CodeUnsealed):
        KEY.check(added)


def test_a_seal_made_with_another_key_or_none_does_not_hold() -> None:
    other = SigningKey(b"o" * 32, "another")

    with pytest.raises(CodeUnsealed, match="another key"):
        other.check(KEY.seal(agent_task(), ["agent"]))
    with pytest.raises(CodeUnsealed, match="carries no seal"):
        KEY.check(agent_task())
    with pytest.raises(CodeUnsealed):
        KEY.check(agent_task(seal="v1:agent:not-a-mac"))


def test_a_copy_is_sealed_only_if_its_original_holds() -> None:
    original = KEY.seal(agent_task(), ["agent"])
    copy = original.model_copy(update={"id": "t1-retry1"})

    assert KEY.check(KEY.reseal(original, copy)) == ("agent",)
    forged = original.model_copy(update={"workflow": "tools.py:flow"})
    assert KEY.reseal(forged, copy.model_copy(update={"workflow": "tools.py:flow"})).seal is None


def test_a_workflow_that_reads_code_from_an_input_the_seal_leaves_out_is_refused() -> None:
    sealed_inputs(("agent",), ("agent",), "ratchet.agent.loop:agent_loop")
    with pytest.raises(CodeUnsealed, match="'tools'"):
        sealed_inputs(("tools", "session"), ("session",), "ratchet.chat.turn:chat_turn")


def test_the_key_comes_from_the_environment_then_its_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(KEY_ENV, "e" * 40)
    assert SigningKey.from_environment() == SigningKey(b"e" * 40, KEY_ENV)

    monkeypatch.delenv(KEY_ENV)
    path = tmp_path / "key"
    path.write_text("f" * 40 + "\n")
    monkeypatch.setenv(KEY_FILE_ENV, str(path))
    assert SigningKey.from_environment() == SigningKey(b"f" * 40, str(path))
    assert "f" * 40 not in repr(SigningKey.from_environment())


@pytest.mark.parametrize("problem", ["short", "missing"])
def test_an_unusable_key_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, problem: str) -> None:
    monkeypatch.delenv(KEY_ENV)
    path = tmp_path / "key"
    if problem == "short":
        path.write_text("abc")
    monkeypatch.setenv(KEY_FILE_ENV, str(path))

    with pytest.raises(InputError) as raised:
        SigningKey.from_environment()

    assert "\n" not in str(raised.value) and str(path) in str(raised.value)


def test_without_one_a_key_file_is_made_once_readable_by_its_owner_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = default_key_file()

    made = SigningKey.from_environment()

    assert path == tmp_path / "config" / "ratchet" / "signing-key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(made.secret) == 64
    assert SigningKey.from_environment() == made


def test_processes_making_the_key_at_once_agree_on_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV} | {"XDG_CONFIG_HOME": str(tmp_path)}
    code = "from ratchet.trust.seal import SigningKey; print(SigningKey.from_environment().secret.decode())"
    started = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(6)
    ]
    keys = {process.communicate(timeout=60)[0].strip() for process in started}

    assert len(keys) == 1
    assert keys == {(tmp_path / "ratchet" / "signing-key").read_text().strip()}
    assert [p.name for p in (tmp_path / "ratchet").iterdir()] == ["signing-key"]
