"""The team's ``save_module`` tool honours its idempotency key: a call run again changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet.demo.ledger import LEDGER_ENV, Ledger
from ratchet.demo.team import save_module
from ratchet.tools import ToolContext


async def test_a_second_call_with_the_same_key_saves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.create()
    monkeypatch.setenv(LEDGER_ENV, str(ledger.path))
    out = tmp_path / "package"
    call = ToolContext(task_id="t-1.3", seq=3, attempt=1, idempotency_key="t-1.3:3")
    args = {"directory": str(out), "module": "tokens", "code": "first = 1\n", "test": "def test(): ...\n"}

    first = await save_module.invoke(args, call)
    # The same call again (its result was lost in a crash): even with other code, nothing is written.
    again = await save_module.invoke({**args, "code": "second = 2\n"}, call)

    assert again == first == {"module": "tokens", "files": ["tokens.py", "test_tokens.py"]}
    assert (out / "tokens.py").read_text() == "first = 1\n"
    assert [i.idempotency_key for i in ledger.invocations()] == ["t-1.3:3"]
    assert [e.idempotency_key for e in ledger.effects()] == ["t-1.3:3"]


async def test_another_key_saves_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(tmp_path / "ledger.db")
    ledger.create()
    monkeypatch.setenv(LEDGER_ENV, str(ledger.path))
    out = tmp_path / "package"
    args = {"directory": str(out), "module": "cli", "code": "v = 1\n", "test": "def test(): ...\n"}

    await save_module.invoke(args, ToolContext(task_id="t-1.3", seq=3, attempt=1, idempotency_key="t-1.3:3"))
    await save_module.invoke(
        {**args, "code": "v = 2\n"}, ToolContext(task_id="t-1.4", seq=3, attempt=1, idempotency_key="t-1.4:3")
    )

    assert (out / "cli.py").read_text() == "v = 2\n"
    assert [e.idempotency_key for e in ledger.effects()] == ["t-1.3:3", "t-1.4:3"]
