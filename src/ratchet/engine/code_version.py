"""The version of a task's code: recorded when the task is made, compared by the worker that takes it.

A task records the version of the code it started on (``Task.code_version``).
It is ``RATCHET_CODE_VERSION`` when that is set (a release tag, a commit: a
short token of letters, digits and ``.``, ``_``, ``+``, ``-``), else a hash of
the code itself: the source file of the workflow function's module, the
source files of the modules of its fixed tools, and the files or modules an
agent's tools come from (its ``tool_sources``). A workflow of Ratchet's own
(the planning agent's loop) is Ratchet's code: it counts as Ratchet's
installed version, not as its file. What the files import is not hashed:
a change there is one to name with ``RATCHET_CODE_VERSION``.

The hash reads files, so it is made once per workflow and tool sources in a
process (a worker's code does not change while it runs), never on a call's
path. docs/workers.md, "Code versions", says what a worker does with it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from .._distribution import DISTRIBUTION
from ..errors import InputError
from ..limits import check_code_version
from ..trust.code import project_path
from .workflow import Workflow

__all__ = [
    "CODE_VERSION_VARIABLE",
    "COMPATIBLE_VERSIONS_VARIABLE",
    "check_code_version",
    "code_version",
    "compatible_versions_allowed",
    "configured_code_version",
]

CODE_VERSION_VARIABLE = "RATCHET_CODE_VERSION"
COMPATIBLE_VERSIONS_VARIABLE = "RATCHET_COMPATIBLE_VERSIONS"

# (workflow reference, tool sources) -> (the function hashed, its version): a notebook cell run
# again makes a new function under the same reference, and is hashed again.
_made: dict[tuple[str, tuple[str, ...]], tuple[Callable[..., Any], str]] = {}


def configured_code_version() -> str | None:
    """``RATCHET_CODE_VERSION``, checked; None when it is unset or empty.

    Raises:
        InputError: it is set to something that is not a code version.
    """
    given = os.environ.get(CODE_VERSION_VARIABLE, "")
    return check_code_version(given, CODE_VERSION_VARIABLE) if given else None


def compatible_versions_allowed(given: bool | None = None) -> bool:
    """`given`, else whether ``RATCHET_COMPATIBLE_VERSIONS`` allows compatible versions (``1``, ``true``).

    Raises:
        InputError: the variable is set to something else than a yes or a no.
    """
    if given is not None:
        return given
    text = os.environ.get(COMPATIBLE_VERSIONS_VARIABLE, "").strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise InputError(
        f"{COMPATIBLE_VERSIONS_VARIABLE}: {ascii(text)[:40]} is neither 1 (allow) nor 0 (do not allow)"
    )


def code_version(workflow: Workflow, inputs: Mapping[str, Any]) -> str:
    """The version of the code a task of `workflow` with `inputs` runs on here.

    Raises:
        InputError: ``RATCHET_CODE_VERSION`` is set to something that is not a code version.
    """
    given = configured_code_version()
    if given is not None:
        return given
    key = (workflow.reference, _tool_sources(inputs))
    made = _made.get(key)
    if made is None or made[0] is not workflow.fn:
        made = (workflow.fn, _hash(workflow, key[1]))
        _made[key] = made
    return made[1]


def _tool_sources(inputs: Mapping[str, Any]) -> tuple[str, ...]:
    """The files or modules an agent task's tools come from (its spec's ``tool_sources``)."""
    spec = inputs.get("agent")
    sources = spec.get("tool_sources") if isinstance(spec, Mapping) else None
    return tuple(str(s) for s in sources) if isinstance(sources, list) else ()


def _hash(workflow: Workflow, tool_sources: tuple[str, ...]) -> str:
    digest = hashlib.sha256(b"ratchet code version 1\0")
    seen: set[str] = set()
    # Each piece once, by where it lives: a module is named differently when a program runs it as
    # its __main__ and when a worker loads its file, so only the file (and its text) counts.
    pieces = [_function_source(workflow.fn)]
    pieces += [_function_source(workflow.tools[name].fn) for name in sorted(workflow.tools)]
    pieces += [_source_file(source) for source in tool_sources]
    for where, content in pieces:
        if where not in seen:
            seen.add(where)
            digest.update(b"%d\0" % len(content) + content)
    return digest.hexdigest()[:12]


def _function_source(fn: Callable[..., Any]) -> tuple[str, bytes]:
    """Where the code of `fn` lives and its text: its module's file; Ratchet's version for Ratchet's own."""
    module_name = getattr(fn, "__module__", "") or ""
    if module_name == "ratchet" or module_name.startswith("ratchet."):
        return "ratchet", f"ratchet {_ratchet_version()}".encode()
    path = getattr(sys.modules.get(module_name), "__file__", None)
    if path:
        try:
            with open(path, "rb") as file:
                return os.path.realpath(path), file.read()
        except OSError:
            pass
    where = f"{module_name}:{fn.__qualname__}"
    try:  # defined in a notebook cell or at a REPL: its own source, where Python kept it
        return where, inspect.getsource(fn).encode()
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return where, code.co_code if code is not None else b""


def _source_file(source: str) -> tuple[str, bytes]:
    """Where a tools file or module is found, as a worker finds it (without importing it), and its text."""
    try:
        if source.endswith(".py"):
            path = str(project_path(source))
        else:
            found = importlib.util.find_spec(source)
            path = found.origin if found is not None and found.origin else ""
        with open(path, "rb") as file:
            return os.path.realpath(path), file.read()
    except (OSError, ImportError, ValueError):
        # Missing here: the task waits for it when it runs; its version says only that it was missing.
        return f"missing {source}", b"<missing>"


def _ratchet_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # run from a source tree
        return "unknown"
