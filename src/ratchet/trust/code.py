"""Which code a process may import for a task, and how a task names its code portably.

A task names its code (its workflow, an agent's tool sources) by reference,
and the reference is data in the store. Whoever can write the store must not
be able to make a worker run code of their choosing, so before a worker
imports a task's code it checks where that code lies. `CodeTrust` admits:

- files under the project root: the directory the process runs in;
- installed packages: the standard library, each site-packages directory,
  and the directories the ``.pth`` files there add (how editable installs
  are made);
- what ``--allow-code PATH|MODULE`` adds (a file, a directory and all below
  it, or a module and its submodules), and ``RATCHET_ALLOW_CODE`` (the same,
  separated by ``os.pathsep``);
- modules this process has already imported, and the script it runs
  (``python app.py``): importing them again runs nothing (the script's
  workflows resolve to the live ``__main__``, `ratchet.engine.scripts`).

Nothing of it admits a task workspace, where agents write files: any file
below a directory holding the marker every workspace root gets when it is
made (`ratchet.trust.workspace.WORKSPACES_MARKER`), below this process's own
workspace root, or below the project's ``.ratchet/workspaces`` (where older
versions kept them) is refused, whichever allowance or project root would
cover it; so are modules found there and allowances that lie there. Nor is
a program's entry point (a module named ``__main__``, or a ``__main__.py``
file) ever loaded as a task's code: importing one runs the program. These
two walls hold even where no policy is enforced (`refuse_unloadable`).

A module name is located without running anything: importing ``a.b.c`` would
run ``a/__init__.py`` and ``a/b/__init__.py`` first, so each package not yet
imported is found with the import system's finders from its parent's search
path (as ``import`` finds it), and all of them must be admitted. A package
that, once imported, points its submodules elsewhere (``__path__`` tricks)
is trusted to: it was admitted.

The policy holds only while a run enforces it (`CodeTrust.enforced`); code a
program imports for itself is its own business.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from importlib.machinery import ModuleSpec
from pathlib import Path

from ..errors import CodeRefused, InputError, WorkflowNotFound, WorkspaceRefused
from .workspace import LEGACY_WORKSPACES, WORKSPACES_MARKER, workspace_root

__all__ = [
    "ALLOW_CODE_ENV",
    "FILE_MODULE_PREFIX",
    "CodeTrust",
    "enforced_trust",
    "file_module_name",
    "main_script",
    "portable_path",
    "project_path",
    "project_root",
    "refuse_unloadable",
    "workspace_holding",
]

ALLOW_CODE_ENV = "RATCHET_ALLOW_CODE"
FILE_MODULE_PREFIX = "ratchet_file_"

_ENFORCED: ContextVar[CodeTrust | None] = ContextVar("ratchet_code_trust", default=None)

# Directories found to hold a workspace marker. Only finding one is remembered: a marker is never
# taken away, but one may appear at any time (a root made after this process looked), so a
# directory found without one is looked at again at the next check (a stat per directory).
_MARKED: set[Path] = set()


@dataclass(frozen=True)
class CodeTrust:
    """Where a task's code may come from: the project root, installed packages, and allowances.

    Args:
        root: the project root (resolved).
        paths: allowed files and directories (resolved).
        modules: allowed module names; each admits its submodules too.
    """

    root: Path
    paths: tuple[Path, ...] = field(default=())
    modules: tuple[str, ...] = field(default=())

    @classmethod
    def here(cls, allow: Iterable[str | Path] = ()) -> CodeTrust:
        """The policy of a process run in the current directory: ``RATCHET_ALLOW_CODE``, then `allow`.

        Raises:
            InputError: an allowance is neither a path nor a module name, or
                lies in a task workspace.
        """
        from_env = [item for item in os.environ.get(ALLOW_CODE_ENV, "").split(os.pathsep) if item.strip()]
        return cls(root=Path.cwd().resolve()).allowing(*from_env, *allow)

    def allowing(self, *allowances: str | Path) -> CodeTrust:
        """This policy, also admitting each of `allowances` (a path, or a module name).

        Raises:
            InputError: an allowance is neither a path nor a module name, or
                lies in a task workspace.
        """
        paths, modules = list(self.paths), list(self.modules)
        for allowance in allowances:
            kind, value = _parse_allowance(allowance)
            if kind == "module":
                modules.append(value)
                continue
            path = Path(value).expanduser().resolve()
            workspaces = workspace_holding(path, self.root)
            if workspaces is not None:
                raise InputError(f"--allow-code: {_never_code(path, workspaces)}")
            paths.append(path)
        return replace(self, paths=tuple(dict.fromkeys(paths)), modules=tuple(dict.fromkeys(modules)))

    @contextmanager
    def enforced(self) -> Iterator[CodeTrust]:
        """Make every load of task code in this context (and the tasks it starts) obey this policy."""
        token = _ENFORCED.set(self)
        try:
            yield self
        finally:
            _ENFORCED.reset(token)

    # ------------------------------------------------------------------ files

    def python_file(self, source: str) -> Path:
        """The ``.py`` file a task's source names, if this policy admits it.

        An absolute source is taken as it is; a relative one is looked for
        under the project root, then under each allowed directory.

        Raises:
            CodeRefused: the file lies outside what this policy admits, in a
                task workspace, or is a ``__main__.py``.
            WorkflowNotFound: no such file where it may be.
        """
        _refuse_program(source)
        given = Path(source).expanduser()
        if given.is_absolute():
            path = given.resolve()
            self._refuse_workspace_file(path)
            if not self.admits_file(path):
                raise CodeRefused(
                    f"{path} is outside the project root {self.root} and installed packages; "
                    f"admit it with --allow-code {path}"
                )
            if not path.is_file():
                raise WorkflowNotFound(f"no Python file at {path}")
            return path
        places = self.places(given)
        refused = None
        for path in places:
            self._refuse_workspace_file(path)
            if not self.admits_file(path):
                refused = path  # "../x.py", or a link out of the project
            elif path.is_file():
                return path
        if refused is not None:
            raise CodeRefused(
                f"{source} leads to {refused}, outside the project root {self.root}; "
                f"admit it with --allow-code {refused}"
            )
        where = f"the project root {self.root}" + (" or an --allow-code directory" if len(places) > 1 else "")
        raise WorkflowNotFound(f"no Python file {source} under {where}")

    def places(self, recorded: str | Path) -> list[Path]:
        """Where a file a task recorded may lie (resolved), in the order it is looked for: an
        absolute path where it is; a relative one under the project root, then under each
        allowed directory. Whether this policy admits each place is another question."""
        given = Path(recorded).expanduser()
        if given.is_absolute():
            return [given.resolve()]
        return [(base / given).resolve() for base in (self.root, *(p for p in self.paths if p.is_dir()))]

    def admits_file(self, path: Path) -> bool:
        """Whether this policy admits the (resolved) file `path`: never one in a task workspace."""
        if workspace_holding(path, self.root) is not None:
            return False
        if file_module_name(path) in sys.modules or path == main_script():
            return True  # loaded already: loading it again runs nothing
        places = (self.root, *self.paths, *installed_places())
        return any(path == place or path.is_relative_to(place) for place in places)

    def _refuse_workspace_file(self, path: Path) -> None:
        workspaces = workspace_holding(path, self.root)
        if workspaces is not None:
            raise CodeRefused(_never_code(path, workspaces))

    # ------------------------------------------------------------------ modules

    def check_module(self, name: str) -> None:
        """Check, without running anything, that importing module `name` runs only admitted code.

        Raises:
            CodeRefused: it, or a package above it, lies outside what this
                policy admits, or in a task workspace; or it is a ``__main__``.
            WorkflowNotFound: there is no such module.
        """
        _refuse_program(name)
        allowed = any(name == m or name.startswith(m + ".") for m in self.modules)
        try:
            specs = _check_outside_workspaces(name, self.root)
        except WorkflowNotFound:
            if allowed:  # what only an import finds (a package's __path__ tricks) is allowed as named
                return
            raise
        for spec in specs:
            if not allowed and not self._admits_spec(spec):
                raise CodeRefused(
                    f"module {spec.name} is at {spec.origin}, outside the project root {self.root} "
                    f"and installed packages; admit it with --allow-code {name}"
                )

    def _admits_spec(self, spec: ModuleSpec) -> bool:
        if spec.origin in ("built-in", "frozen"):
            return True
        if spec.origin is None:  # a namespace package runs no code; its modules are checked themselves
            return spec.submodule_search_locations is not None
        return self.admits_file(Path(spec.origin).resolve())


def refuse_unloadable(source: str, root: Path | None = None) -> None:
    """Refuse, with no policy enforced, what is never a task's code: a program's entry point, or a
    file or module in a task workspace (`root`: the project root, by default the current directory).

    Raises:
        CodeRefused: `source` is either.
    """
    base = (root or Path.cwd()).resolve()
    _refuse_program(source)
    if source.endswith(".py"):
        path = (base / Path(source).expanduser()).resolve()
        workspaces = workspace_holding(path, base)
        if workspaces is not None:
            raise CodeRefused(_never_code(path, workspaces))
        return
    with contextlib.suppress(WorkflowNotFound):  # not found so: the import says what is missing
        _check_outside_workspaces(source, base)


def workspace_holding(path: Path, root: Path) -> Path | None:
    """The task workspace root that (resolved) `path` is or lies in, if any.

    One is any directory holding the workspace marker, this process's own
    workspace root, and the project's ``.ratchet/workspaces`` under `root`
    (where workspaces were kept before they left the project).
    """
    for workspaces in _workspace_roots(root):
        if path == workspaces or path.is_relative_to(workspaces):
            return workspaces
    for directory in (path, *path.parents):
        if directory in _MARKED:
            return directory
        if (directory / WORKSPACES_MARKER).is_file():
            _MARKED.add(directory)
            return directory
    return None


def _workspace_roots(root: Path) -> list[Path]:
    roots = [(root / LEGACY_WORKSPACES).resolve()]
    with contextlib.suppress(WorkspaceRefused):  # no home: then only markers and the legacy place
        roots.append(workspace_root())
    return roots


def _never_code(path: Path, workspaces: Path) -> str:
    return (
        f"{path} lies in the task workspaces at {workspaces}, where agents write files: "
        "it is never loaded as code (review it and copy it into the project to use it)"
    )


def _refuse_program(source: str) -> None:
    """Refuse a ``__main__`` module or ``__main__.py`` file, and a module of Python itself.

    Importing a ``__main__`` runs a program; Python's own modules define no
    task code, and some act when imported (``antigravity`` opens a browser,
    ``this`` prints), so naming one is never a way to make a process act.
    """
    name = Path(source).name if source.endswith(".py") else source.rpartition(".")[2]
    if name in ("__main__", "__main__.py"):
        raise CodeRefused(
            f"{source} is a program's entry point (__main__): importing it runs the program; "
            "name the module that defines the code instead"
        )
    if not source.endswith(".py") and source.partition(".")[0] in sys.stdlib_module_names:
        raise CodeRefused(
            f"{source} is a module of Python itself, which defines no task code; "
            "name a module or file of your project"
        )


def _check_outside_workspaces(name: str, root: Path) -> list[ModuleSpec]:
    """The specs `_locate` finds for module `name`, none of them in a task workspace.

    A module imported already counts by its file: a task is not given the
    code of one that came from a workspace either.

    Raises:
        CodeRefused: the module, or a package above it, lies in a task workspace.
        WorkflowNotFound: there is no such module.
    """
    loaded = sys.modules.get(name)
    if loaded is not None:
        origins = [(name, getattr(loaded, "__file__", None))]
        specs: list[ModuleSpec] = []
    else:
        specs = _locate(name)
        origins = [(spec.name, spec.origin) for spec in specs]
    for module, origin in origins:
        if origin is None or origin in ("built-in", "frozen"):
            continue  # a namespace package runs no code; its modules are checked themselves
        path = Path(origin).resolve()
        workspaces = workspace_holding(path, root)
        if workspaces is not None:
            raise CodeRefused(f"module {module}: {_never_code(path, workspaces)}")
    return specs


def enforced_trust() -> CodeTrust | None:
    """The policy a run enforces here, if any."""
    return _ENFORCED.get()


def file_module_name(path: Path) -> str:
    """The name a ``.py`` file loaded by path gets in ``sys.modules`` (one per resolved path)."""
    return FILE_MODULE_PREFIX + hashlib.sha1(str(path).encode()).hexdigest()[:12]


def main_script() -> Path | None:
    """The ``.py`` file this process runs as its ``__main__`` (``python app.py``), resolved; None if
    there is none (a REPL, a notebook's kernel, ``python -c``) or it is a package's ``__main__.py``
    (``python -m asyncio``), which is never a task's code."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not isinstance(path, str) or not path.endswith(".py") or Path(path).name == "__main__.py":
        return None
    return Path(path).resolve()


def project_root() -> Path:
    """The project root: that of the code trust the run enforces, else the current directory."""
    trust = enforced_trust()
    return trust.root if trust is not None else Path.cwd().resolve()


def portable_path(path: str | Path, root: Path | None = None) -> str:
    """A file as a task records it: relative to the project root when under it, else absolute.

    A relative path survives moving the project: a worker in the new place
    finds it under its own root (`project_path`).
    """
    base = (root or project_root()).resolve()
    resolved = (base / Path(path).expanduser()).resolve()
    return resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else str(resolved)


def project_path(recorded: str | Path) -> Path:
    """A file a task recorded (`portable_path`), found again where a tools file is looked for
    (`CodeTrust.places`): the first of its places that holds it, else the first (under the
    project root, for a relative path). Whether the file is there is the caller's to check."""
    places = (enforced_trust() or CodeTrust(root=project_root())).places(recorded)
    return next((place for place in places if place.exists()), places[0])


def _parse_allowance(allowance: str | Path) -> tuple[str, str]:
    """``("path", text)`` or ``("module", name)``: an existing path wins, then a dotted name."""
    if isinstance(allowance, Path):
        return "path", str(allowance)
    text = allowance.strip()
    if not text:
        raise InputError("--allow-code: give a path or a module name, not an empty string")
    if Path(text).expanduser().exists():
        return "path", text
    if all(part.isidentifier() for part in text.split(".")):
        return "module", text
    if "/" in text or os.sep in text or text.endswith(".py"):
        return "path", text
    raise InputError(f"--allow-code: {text!r} is neither a path nor a module name")


def _locate(name: str) -> list[ModuleSpec]:
    """The spec of module `name` and of each package above it not yet imported, running nothing.

    Raises:
        WorkflowNotFound: a part of the name finds nothing.
    """
    specs: list[ModuleSpec] = []
    search: list[str] | None = None  # None: the top level, sys.path
    parts = name.split(".")
    for depth in range(1, len(parts) + 1):
        prefix = ".".join(parts[:depth])
        module = sys.modules.get(prefix)
        if module is not None:
            search = list(getattr(module, "__path__", None) or [])
        else:
            spec = _find_spec(prefix, search)
            if spec is None:
                raise WorkflowNotFound(f"cannot import {name!r}: no module named {prefix!r}")
            specs.append(spec)
            search = list(spec.submodule_search_locations or [])
        if depth < len(parts) and not search:
            raise WorkflowNotFound(f"cannot import {name!r}: {prefix} is not a package")
    return specs


def _find_spec(name: str, search: list[str] | None) -> ModuleSpec | None:
    """Ask each finder of the import system, as ``import`` does, without importing anything."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        try:
            spec = find_spec(name, search)
        except KeyError:
            # The path finder found only namespace portions, and a namespace package's path is
            # computed from its parent's module, which is not imported (nothing is): the same
            # package, described without its parent.
            if search is None:
                raise
            return _namespace_spec(name, search)
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


def _namespace_spec(name: str, search: list[str]) -> ModuleSpec:
    """The spec of namespace package `name`: its portions are the directories of its name in `search`."""
    part = name.rpartition(".")[2]
    spec = ModuleSpec(name, None, is_package=True)
    spec.submodule_search_locations = [str(Path(d) / part) for d in search if (Path(d) / part).is_dir()]
    return spec


@functools.cache
def installed_places() -> tuple[Path, ...]:
    """Where installed code lives: the standard library, site-packages, and what ``.pth`` files add."""
    paths = sysconfig.get_paths()
    places = {Path(paths[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    sites = [*site.getsitepackages(), site.getusersitepackages()]
    for directory in map(Path, sites):
        places.add(directory)
        for pth in sorted(directory.glob("*.pth")) if directory.is_dir() else ():
            places.update(_pth_directories(pth))
    return tuple(sorted({place.resolve() for place in places}))


def _pth_directories(pth: Path) -> list[Path]:
    """The directories a ``.pth`` file adds to sys.path (its lines that are not comments or code)."""
    try:
        lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        directory = (pth.parent / line).resolve()
        if directory.is_dir():
            found.append(directory)
    return found
