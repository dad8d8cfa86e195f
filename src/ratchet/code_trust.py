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
- modules this process has already imported: importing them again runs
  nothing.

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

from .errors import CodeRefused, InputError, WorkflowNotFound

__all__ = [
    "ALLOW_CODE_ENV",
    "FILE_MODULE_PREFIX",
    "CodeTrust",
    "enforced_trust",
    "file_module_name",
    "portable_path",
]

ALLOW_CODE_ENV = "RATCHET_ALLOW_CODE"
FILE_MODULE_PREFIX = "ratchet_file_"

_ENFORCED: ContextVar[CodeTrust | None] = ContextVar("ratchet_code_trust", default=None)


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
            InputError: an allowance is neither a path nor a module name.
        """
        from_env = [item for item in os.environ.get(ALLOW_CODE_ENV, "").split(os.pathsep) if item.strip()]
        return cls(root=Path.cwd().resolve()).allowing(*from_env, *allow)

    def allowing(self, *allowances: str | Path) -> CodeTrust:
        """This policy, also admitting each of `allowances` (a path, or a module name).

        Raises:
            InputError: an allowance is neither a path nor a module name.
        """
        paths, modules = list(self.paths), list(self.modules)
        for allowance in allowances:
            kind, value = _parse_allowance(allowance)
            if kind == "module":
                modules.append(value)
            else:
                paths.append(Path(value).expanduser().resolve())
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
            CodeRefused: the file lies outside what this policy admits.
            WorkflowNotFound: no such file where it may be.
        """
        given = Path(source).expanduser()
        if given.is_absolute():
            path = given.resolve()
            if not self.admits_file(path):
                raise CodeRefused(
                    f"{path} is outside the project root {self.root} and installed packages; "
                    f"admit it with --allow-code {path}"
                )
            if not path.is_file():
                raise WorkflowNotFound(f"no Python file at {path}")
            return path
        bases = [self.root, *(p for p in self.paths if p.is_dir())]
        refused = None
        for base in bases:
            path = (base / given).resolve()
            if not self.admits_file(path):
                refused = path  # "../x.py", or a link out of the project
            elif path.is_file():
                return path
        if refused is not None:
            raise CodeRefused(
                f"{source} leads to {refused}, outside the project root {self.root}; "
                f"admit it with --allow-code {refused}"
            )
        where = f"the project root {self.root}" + (" or an --allow-code directory" if len(bases) > 1 else "")
        raise WorkflowNotFound(f"no Python file {source} under {where}")

    def admits_file(self, path: Path) -> bool:
        """Whether this policy admits the (resolved) file `path`."""
        if file_module_name(path) in sys.modules:
            return True  # loaded already: loading it again runs nothing
        places = (self.root, *self.paths, *installed_places())
        return any(path == place or path.is_relative_to(place) for place in places)

    # ------------------------------------------------------------------ modules

    def check_module(self, name: str) -> None:
        """Check, without running anything, that importing module `name` runs only admitted code.

        Raises:
            CodeRefused: it, or a package above it, lies outside what this policy admits.
            WorkflowNotFound: there is no such module.
        """
        if name in sys.modules or any(name == m or name.startswith(m + ".") for m in self.modules):
            return
        for spec in _locate(name):
            if not self._admits_spec(spec):
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


def enforced_trust() -> CodeTrust | None:
    """The policy a run enforces here, if any."""
    return _ENFORCED.get()


def file_module_name(path: Path) -> str:
    """The name a ``.py`` file loaded by path gets in ``sys.modules`` (one per resolved path)."""
    return FILE_MODULE_PREFIX + hashlib.sha1(str(path).encode()).hexdigest()[:12]


def portable_path(path: str | Path, root: Path | None = None) -> str:
    """A file as a task records it: relative to the project root when under it, else absolute.

    A relative path survives moving the project: a worker in the new place
    finds it under its own root.
    """
    resolved = Path(path).expanduser().resolve()
    base = (root or Path.cwd()).resolve()
    return resolved.relative_to(base).as_posix() if resolved.is_relative_to(base) else str(resolved)


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
        spec = find_spec(name, search)
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


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
