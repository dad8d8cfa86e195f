"""The version of a task's code (`ratchet.engine.code_version`), made when the task is.

``RATCHET_CODE_VERSION`` when set (checked), else a hash of the workflow's
module file, its tools' and an agent's tools files: the same code gives the
same version in any process, changed code another. A fork and a retry keep
their origin's; a schedule's task takes the version of the worker that starts it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import ratchet
from ratchet.engine.code_version import check_code_version, code_version, compatible_versions_allowed
from ratchet.engine.workflow import load_workflow
from ratchet.errors import InputError
from ratchet.records import TaskStatus
from ratchet.runtime import Runtime
from ratchet.store import StateStore

from .flows import FLOWS

FLOW = """
import ratchet


@ratchet.workflow
async def {name}(ctx: ratchet.Context) -> str:
    return "{said}"
"""


def _write(path: Path, name: str, said: str) -> str:
    path.write_text(FLOW.format(name=name, said=said))
    return f"{path}:{name}"


@pytest.fixture(autouse=True)
def no_version_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RATCHET_CODE_VERSION", raising=False)


async def test_a_task_records_a_hash_of_its_code_and_the_same_code_gives_the_same(store: StateStore) -> None:
    rt = Runtime(store)

    first = await store.get_task(await rt.submit(f"{FLOWS}:call_one", {"ledger": "a", "tool_name": "record"}))
    second = await store.get_task(
        await rt.submit(f"{FLOWS}:call_one", {"ledger": "b", "tool_name": "record"})
    )

    assert first.code_version is not None and re.fullmatch(r"[0-9a-f]{12}", first.code_version)
    assert second.code_version == first.code_version


def test_changed_code_has_another_version_and_the_variable_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = code_version(load_workflow(_write(tmp_path / "one.py", "one", "before")), {})
    after = code_version(load_workflow(_write(tmp_path / "two.py", "two", "after")), {})
    given = {"agent": {"tool_sources": [str(tmp_path / "one.py")]}}
    with_tools = code_version(load_workflow(f"{tmp_path / 'two.py'}:two"), given)

    assert len({before, after, with_tools}) == 3  # the tools' file counts too
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v1.4.2+build_7")
    assert code_version(load_workflow(f"{tmp_path / 'one.py'}:one"), {}) == "v1.4.2+build_7"


@pytest.mark.parametrize("bad", ["", "has space", "-dash", ".dot", "x" * 65, "naïve", "a/b", "a\nb"])
def test_a_code_version_is_a_short_token(bad: str) -> None:
    with pytest.raises(InputError, match=r"RATCHET_CODE_VERSION: .* is not a code version"):
        check_code_version(bad, "RATCHET_CODE_VERSION")


async def test_a_bad_variable_makes_no_task(store: StateStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_CODE_VERSION", "two words")

    with pytest.raises(InputError, match="is not a code version"):
        await Runtime(store).submit(f"{FLOWS}:call_one", {"ledger": "a", "tool_name": "record"})

    assert await store.count_task_rows() == 0


async def test_a_retry_keeps_its_origins_version(
    store: StateStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rt = Runtime(store)
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v1")
    inputs = {"ledger": str(tmp_path / "ledger"), "tool_name": "always_fails"}
    failed = await rt.run(f"{FLOWS}:call_one", inputs)
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v2")

    again = await store.get_task(await rt.retry(failed.id, queue=False))

    assert failed.status is TaskStatus.FAILED and failed.code_version == "v1"
    assert again.code_version == "v1"


async def test_a_task_of_another_version_waits_and_one_of_none_takes_the_workers(
    store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = Runtime(store)
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v1")
    made = await rt.submit(f"{FLOWS}:iterating", {"count": 0}, queue=False)
    old = await rt.submit(f"{FLOWS}:iterating", {"count": 0}, queue=False)
    task = await store.get_task(old)
    await store.update_task(task.model_copy(update={"code_version": None}))  # as made before versions
    monkeypatch.setenv("RATCHET_CODE_VERSION", "v2")

    left = await ratchet.engine.run_task(store, made)
    ran = await ratchet.engine.run_task(store, old)

    assert left.status_text == "waiting(code)"
    [said] = [e for e in await store.list_events(made) if e.kind == "code_version"]
    assert "started on code version v1 and this worker runs version v2" in said.message
    assert (ran.status, ran.code_version) == (TaskStatus.COMPLETED, "v2")


@pytest.mark.parametrize(
    ("text", "allowed"), [("1", True), ("true", True), ("0", False), ("", False), ("no", False)]
)
def test_the_variable_allows_compatible_versions_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch, text: str, allowed: bool
) -> None:
    monkeypatch.setenv("RATCHET_COMPATIBLE_VERSIONS", text)

    assert compatible_versions_allowed() is allowed
    assert compatible_versions_allowed(not allowed) is (not allowed)  # given, it wins


def test_a_variable_that_is_neither_yes_nor_no_is_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RATCHET_COMPATIBLE_VERSIONS", "maybe")

    with pytest.raises(InputError, match="RATCHET_COMPATIBLE_VERSIONS: 'maybe' is neither 1"):
        compatible_versions_allowed()
