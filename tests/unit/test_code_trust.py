"""The code-trust policy and the workspace confinement, on their own: what each admits and refuses."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ratchet.engine.workflow import load_module
from ratchet.errors import CodeRefused, InputError, WorkflowNotFound, WorkspaceRefused
from ratchet.trust.code import ALLOW_CODE_ENV, CodeTrust, portable_path, project_path
from ratchet.trust.workspace import confined_workspace, workspace_for, workspace_root


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "tools.py").write_text("X = 1\n")
    (root / "pkg" / "flows.py").write_text("Y = 2\n")
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    other = tmp_path / "outside"
    other.mkdir()
    (other / "evil.py").write_text("raise SystemExit('it ran')\n")
    return other


@pytest.fixture
def trust(project: Path) -> CodeTrust:
    return CodeTrust(root=project.resolve())


@pytest.fixture
def outside_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package on sys.path, outside the project, whose __init__ would fail loudly if it ran."""
    name = f"far_{tmp_path.name.replace('-', '_')}"
    package = tmp_path / "site" / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise SystemExit('the package ran')\n")
    (package / "tools.py").write_text("Z = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield name
    for loaded in [m for m in sys.modules if m.startswith(name)]:
        del sys.modules[loaded]


# --------------------------------------------------------------------------- files


def test_a_file_of_the_project_is_found_by_its_relative_or_absolute_path(
    trust: CodeTrust, project: Path
) -> None:
    assert trust.python_file("tools.py") == project / "tools.py"
    assert trust.python_file("pkg/flows.py") == project / "pkg" / "flows.py"
    assert trust.python_file(str(project / "tools.py")) == project / "tools.py"


@pytest.mark.parametrize("source", ["ABSOLUTE", "../outside/evil.py"])
def test_a_file_outside_the_project_is_refused(trust: CodeTrust, outside: Path, source: str) -> None:
    given = str(outside / "evil.py") if source == "ABSOLUTE" else source
    with pytest.raises(CodeRefused, match="--allow-code"):
        trust.python_file(given)


def test_a_link_out_of_the_project_is_refused(trust: CodeTrust, project: Path, outside: Path) -> None:
    (project / "sneaky.py").symlink_to(outside / "evil.py")
    with pytest.raises(CodeRefused, match=r"evil\.py"):
        trust.python_file("sneaky.py")


def test_an_allowed_file_or_directory_is_admitted_and_searched(trust: CodeTrust, outside: Path) -> None:
    evil = outside / "evil.py"
    assert trust.allowing(str(evil)).python_file(str(evil)) == evil
    by_directory = trust.allowing(outside)
    assert by_directory.python_file(str(outside / "evil.py")) == outside / "evil.py"
    assert by_directory.python_file("evil.py") == outside / "evil.py"  # the project first, then this


def test_a_missing_file_is_missing_not_refused(trust: CodeTrust, project: Path) -> None:
    with pytest.raises(WorkflowNotFound, match=r"no Python file gone\.py under the project root"):
        trust.python_file("gone.py")
    with pytest.raises(WorkflowNotFound, match="no Python file at"):
        trust.python_file(str(project / "gone.py"))


def test_load_module_obeys_the_trust_it_is_given(trust: CodeTrust, outside: Path) -> None:
    with pytest.raises(CodeRefused):
        load_module(str(outside / "evil.py"), trust)
    with trust.enforced(), pytest.raises(CodeRefused):
        load_module(str(outside / "evil.py"))


# --------------------------------------------------------------------------- modules


def test_installed_and_already_imported_modules_are_admitted(trust: CodeTrust) -> None:
    trust.check_module("ratchet.agent.loop")  # imported already
    trust.check_module("pydantic")  # site-packages


@pytest.mark.parametrize("name", ["json", "antigravity", "this", "http.server"])
def test_a_module_of_python_itself_is_never_task_code(trust: CodeTrust, name: str) -> None:
    """It defines no task code, and some act when imported (antigravity opens a browser)."""
    with pytest.raises(CodeRefused, match="a module of Python itself"):
        trust.check_module(name)


def test_a_module_outside_is_refused_without_running_its_package(
    trust: CodeTrust, outside_module: str
) -> None:
    with pytest.raises(CodeRefused, match=outside_module):
        trust.check_module(f"{outside_module}.tools")
    assert outside_module not in sys.modules


def test_a_module_allowance_admits_it_and_its_submodules(trust: CodeTrust, outside_module: str) -> None:
    allowed = trust.allowing(outside_module)
    allowed.check_module(outside_module)
    allowed.check_module(f"{outside_module}.tools")
    assert outside_module not in sys.modules


def test_a_missing_module_is_missing(trust: CodeTrust) -> None:
    with pytest.raises(WorkflowNotFound, match="no module named 'no_such_module_anywhere'"):
        trust.check_module("no_such_module_anywhere.tools")
    with pytest.raises(WorkflowNotFound, match=r"pydantic\.main is not a package"):
        trust.check_module("pydantic.main.deeper")


# --------------------------------------------------------------------------- allowances


def test_allowances_come_from_the_environment_and_the_arguments(
    project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    monkeypatch.setenv(ALLOW_CODE_ENV, f"{outside}:some.module")
    trust = CodeTrust.here(["other.module", Path("pkg")])

    assert trust.root == project.resolve()
    assert trust.paths == (outside.resolve(), (project / "pkg").resolve())
    assert trust.modules == ("some.module", "other.module")


@pytest.mark.parametrize("bad", ["", "not a module!", "-x"])
def test_an_allowance_that_is_neither_a_path_nor_a_module_is_bad_input(trust: CodeTrust, bad: str) -> None:
    with pytest.raises(InputError, match="--allow-code"):
        trust.allowing(bad)


def test_files_are_recorded_relative_to_the_project_root_when_under_it(project: Path, outside: Path) -> None:
    assert portable_path(project / "pkg" / "flows.py", project) == "pkg/flows.py"
    assert portable_path(outside / "evil.py", project) == str(outside / "evil.py")


def test_a_recorded_file_is_found_again_under_the_project_root(
    project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project root is the enforced trust's (a run's), else the current directory; a relative
    path is looked for there first, then in each allowed directory, as a tools file is."""
    monkeypatch.chdir(outside)
    assert project_path("tools.py") == outside.resolve() / "tools.py"
    with CodeTrust(root=project.resolve()).enforced():
        assert portable_path(project / "pkg" / "flows.py") == "pkg/flows.py"
        assert project_path("pkg/flows.py") == project.resolve() / "pkg" / "flows.py"
        assert project_path("evil.py") == project.resolve() / "evil.py"  # nowhere: where it belongs
        assert project_path(str(outside / "evil.py")) == (outside / "evil.py").resolve()
    with CodeTrust(root=project.resolve()).allowing(outside).enforced():
        assert project_path("evil.py") == (outside / "evil.py").resolve()
        assert project_path("tools.py") == project.resolve() / "tools.py"


# --------------------------------------------------------------------------- workspaces


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "workspaces").mkdir(parents=True)
    monkeypatch.setenv("RATCHET_HOME", str(home))
    return home


def test_a_workspace_under_the_root_is_used(home: Path) -> None:
    assert confined_workspace("t1", None) == workspace_for("t1") == workspace_root() / "t1"
    assert confined_workspace("t1", str(home / "workspaces" / "t1")) == (home / "workspaces" / "t1").resolve()
    assert confined_workspace("t1", "t1") == workspace_root() / "t1"  # relative: from the root


@pytest.mark.parametrize(
    "recorded", ["/tmp/victim", "WORKSPACES", "WORKSPACES/../elsewhere", "../../victim", "WORKSPACES/link"]
)
def test_a_workspace_outside_the_root_is_refused(home: Path, tmp_path: Path, recorded: str) -> None:
    (tmp_path / "victim").mkdir()
    (home / "workspaces" / "link").symlink_to(tmp_path / "victim")
    given = recorded.replace("WORKSPACES", str(home / "workspaces"))
    with pytest.raises(WorkspaceRefused, match="not under the workspace root"):
        confined_workspace("t1", given)


def test_this_tasks_workspace_under_another_home_moves_to_this_root(home: Path) -> None:
    assert confined_workspace("t1", "/old/project/.ratchet/workspaces/t1") == workspace_root() / "t1"
    with pytest.raises(WorkspaceRefused):
        confined_workspace("t1", "/old/project/.ratchet/workspaces/t2")  # another task's
