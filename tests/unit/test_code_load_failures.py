"""Code that fails to load is only code that does not load.

A module that raises or exits (``SystemExit``) while it is imported is
`WorkflowNotFound` with one line naming it and what it raised, and leaves
nothing behind in ``sys.modules``; only ``KeyboardInterrupt`` goes through.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ratchet.engine.workflow import load_module
from ratchet.errors import WorkflowNotFound
from ratchet.trust.code import CodeTrust


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project root, the current directory."""
    root = (tmp_path / "project").resolve()
    root.mkdir()
    monkeypatch.chdir(root)
    return root


FAILING = {
    "exit-message": (
        "import sys\nsys.exit('set API_KEY')\n",
        "it exits when imported: sys.exit('set API_KEY')",
    ),
    "exit-0": ("import sys\nsys.exit(0)\n", "it exits when imported: sys.exit(0)"),
    "system-exit-3": ("raise SystemExit(3)\n", "it exits when imported: sys.exit(3)"),
    "bare-exit": ("raise SystemExit\n", "it exits when imported: sys.exit()"),
    "exception": ("raise RuntimeError('no\\nconfig')\n", "RuntimeError: no config"),
    "generator-exit": ("raise GeneratorExit('odd')\n", "GeneratorExit: odd"),
}


def loaded_from(path: Path) -> list[str]:
    """The names of the modules in sys.modules loaded from `path`."""
    return [name for name, m in list(sys.modules.items()) if getattr(m, "__file__", None) == str(path)]


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_file_that_raises_or_exits_as_it_loads_does_not_load_and_is_not_kept(
    project: Path, case: str
) -> None:
    code, said = FAILING[case]
    (project / "bad_tools.py").write_text(code)

    for _ in range(2):  # the second load tries again: nothing half-loaded is kept
        with pytest.raises(WorkflowNotFound) as failed:
            load_module("bad_tools.py", CodeTrust.here())
        assert failed.value.message == f"cannot load {project / 'bad_tools.py'}: {said}"
    assert not loaded_from(project / "bad_tools.py")


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_module_that_raises_or_exits_as_it_is_imported_does_not_load_and_is_not_kept(
    project: Path, case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, said = FAILING[case]
    name = f"bad_{case.replace('-', '_')}_{project.parent.name.replace('-', '_')}"
    (project / f"{name}.py").write_text(code)
    monkeypatch.syspath_prepend(str(project))

    with pytest.raises(WorkflowNotFound) as failed:
        load_module(name, CodeTrust.here())

    assert failed.value.message == f"cannot import {name!r}: {said}"
    assert name not in sys.modules


def test_keyboard_interrupt_at_import_goes_through_and_leaves_nothing(project: Path) -> None:
    (project / "interrupted.py").write_text("raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_module("interrupted.py", CodeTrust.here())
    assert not loaded_from(project / "interrupted.py")
