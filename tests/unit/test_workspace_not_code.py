"""What an agent writes is never code, nor is a program's entry point.

The workspace root lives outside the project by default, every root is marked
when it is made, and code trust refuses whatever lies below a mark, whatever
policy or RATCHET_HOME the checking process has. A program's entry point
(``__main__``) is never a task's code.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.engine.workflow import load_module
from ratchet.errors import CodeRefused, InputError
from ratchet.trust.code import CodeTrust, refuse_unloadable
from ratchet.trust.workspace import (
    WORKSPACES_MARKER,
    make_workspace,
    ratchet_home,
    workspace_for,
    workspace_root,
)

RUNS = """
import pathlib
pathlib.Path({marker!r}).write_text("ran")
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project root, the current directory, with a workspace root inside it (RATCHET_HOME=./state)."""
    root = (tmp_path / "project").resolve()
    root.mkdir()
    (root / "tools.py").write_text("X = 1\n")
    monkeypatch.chdir(root)
    monkeypatch.setenv("RATCHET_HOME", "state")
    return root


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    """The file a workspace's code writes if it ever runs."""
    return tmp_path / "it-ran"


@pytest.fixture
def notes(project: Path, marker: Path) -> Iterator[Path]:
    """``notes.py`` as an agent wrote it in its workspace (under a marked root in the project)."""
    workspace = make_workspace(workspace_for("t1"))
    path = workspace / "notes.py"
    path.write_text(RUNS.format(marker=str(marker)))
    yield path
    assert not marker.exists(), "the workspace's code ran"


# --------------------------------------------------------------------------- where workspaces live


def test_the_default_home_is_the_per_user_state_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("RATCHET_HOME", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert ratchet_home() == tmp_path / "state" / "ratchet"

    for unusable in ("", "relative/state"):  # the XDG rule: unset, empty or relative is not a place
        monkeypatch.setenv("XDG_STATE_HOME", unusable)
        monkeypatch.setenv("HOME", str(tmp_path / "me"))
        assert ratchet_home() == tmp_path / "me" / ".local" / "state" / "ratchet"

    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "chosen"))
    assert ratchet_home() == tmp_path / "chosen"


def test_making_a_workspace_marks_its_root_first(project: Path) -> None:
    made = make_workspace(workspace_for("t1"))

    assert made == project / "state" / "workspaces" / "t1" and made.is_dir()
    assert (workspace_root() / WORKSPACES_MARKER).is_file()


# --------------------------------------------------------------------------- files


def test_a_workspace_file_is_refused_though_the_project_root_covers_it(project: Path, notes: Path) -> None:
    trust = CodeTrust.here()
    for source in (str(notes), "state/workspaces/t1/notes.py"):
        with pytest.raises(CodeRefused, match="never loaded as code"):
            trust.python_file(source)
        with pytest.raises(CodeRefused, match="never loaded as code"):
            load_module(source, trust)
    assert not trust.admits_file(notes)


def test_a_workspace_file_is_refused_with_no_policy_enforced(notes: Path) -> None:
    for source in (str(notes), "state/workspaces/t1/notes.py"):
        with pytest.raises(CodeRefused, match="never loaded as code"):
            load_module(source)


def test_the_mark_holds_whatever_home_the_checking_process_has(
    project: Path, notes: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RATCHET_HOME", str(tmp_path / "another-home"))
    with pytest.raises(CodeRefused, match=str(project / "state" / "workspaces")):
        CodeTrust.here().python_file(str(notes))


def test_its_own_root_and_the_legacy_project_root_are_refused_unmarked(project: Path) -> None:
    own = project / "state" / "workspaces" / "t1"
    legacy = project / ".ratchet" / "workspaces" / "t1"
    for directory in (own, legacy):
        directory.mkdir(parents=True)
        (directory / "notes.py").write_text("X = 1\n")
    trust = CodeTrust.here()

    for directory in (own, legacy):
        assert not (directory.parent / WORKSPACES_MARKER).exists()
        with pytest.raises(CodeRefused, match="never loaded as code"):
            trust.python_file(str(directory / "notes.py"))


def test_a_link_from_the_project_into_a_workspace_is_refused(project: Path, notes: Path) -> None:
    (project / "helpers.py").symlink_to(notes)
    with pytest.raises(CodeRefused, match="never loaded as code"):
        CodeTrust.here().python_file("helpers.py")


# --------------------------------------------------------------------------- allowances


def test_an_allowance_covering_a_workspace_does_not_admit_it(
    project: Path, notes: Path, tmp_path: Path
) -> None:
    covering = CodeTrust.here([project, tmp_path])
    assert covering.python_file("tools.py") == project / "tools.py"  # the rest of the project still is
    with pytest.raises(CodeRefused, match="never loaded as code"):
        covering.python_file(str(notes))


@pytest.mark.parametrize("inside", ["file", "directory", "root"])
def test_an_allowance_inside_a_workspace_is_bad_input(notes: Path, inside: str) -> None:
    allowance = {"file": notes, "directory": notes.parent, "root": notes.parent.parent}[inside]
    with pytest.raises(InputError, match=r"--allow-code: .* never loaded as code"):
        CodeTrust.here([str(allowance)])


# --------------------------------------------------------------------------- modules


def test_a_module_found_in_a_workspace_is_refused_before_it_runs(
    project: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = notes.parent / "helpers"
    package.mkdir()
    (package / "__init__.py").write_text(notes.read_text())
    (package / "more.py").write_text("Y = 2\n")
    monkeypatch.syspath_prepend(str(notes.parent))  # the workspace made importable
    monkeypatch.syspath_prepend(str(project))  # and the project: its namespace package `state`
    module = f"notes_{project.parent.name.replace('-', '_')}"
    notes.rename(notes.with_name(f"{module}.py"))
    trust = CodeTrust.here()

    for name in (module, "helpers", "helpers.more", "state.workspaces.t1.helpers"):
        with pytest.raises(CodeRefused, match="never loaded as code"):
            trust.check_module(name)
        with pytest.raises(CodeRefused, match="never loaded as code"):
            load_module(name)  # no policy enforced: refused all the same
    with pytest.raises(CodeRefused, match="never loaded as code"):
        trust.allowing("helpers").check_module("helpers.more")  # a module allowance neither
    assert "helpers" not in sys.modules


# --------------------------------------------------------------------------- programs


@pytest.fixture
def program(tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An installed-looking package whose ``__main__`` writes the marker if it is ever imported."""
    name = f"prog_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / "site" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(RUNS.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield name
    for loaded in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[loaded]
    assert not marker.exists(), "the program ran"


@pytest.mark.parametrize("source", ["{name}.__main__", "__main__", "ratchet.__main__", "FILE"])
def test_a_programs_entry_point_is_never_loaded(program: str, tmp_path: Path, source: str) -> None:
    given = (
        str(tmp_path / "site" / program / "__main__.py") if source == "FILE" else source.format(name=program)
    )
    trust = CodeTrust.here([program, str(tmp_path / "site")])
    with pytest.raises(CodeRefused, match=r"entry point \(__main__\)"):
        load_module(given, trust)
    with pytest.raises(CodeRefused, match=r"entry point \(__main__\)"):
        refuse_unloadable(given)
