"""Checking what makes an agent before a task records it: its model spec and its tool sources.

`ratchet run`/`submit` (cli/agent_spec.py) and the MCP tool ``create_task``
check their input here, the same way, so a bad model spec or tools file is
one line of bad input and nothing is stored.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CodeUnavailable, InputError
from ..providers import ScriptedModel, resolve_model
from ..providers.scripted import portable_model
from ..providers.settings import ModelSettings, check_settings
from ..tools import Tool
from ..trust.code import portable_path
from .spec import BUILTIN_TOOL_NAMES, load_tools

__all__ = ["check_tool_sources", "checked_model"]


def check_tool_sources(sources: list[str], *, option: str) -> list[str]:
    """The tool sources checked, as a task records them: a .py file under the project root (the
    current directory) relative to it, a module by its name.

    Args:
        option: how the caller names the input, to begin each error line (``--tools``).

    Nothing of a source is imported before it is checked: a file or module
    in a task workspace, or a program's entry point (``__main__``), is
    refused as it is named.

    Raises:
        InputError: a tools file or module is missing, refused, does not load
            (raises, or exits, when imported), defines no tool, or reuses a
            tool's name.
    """
    checked = [_checked_tools(source, option) for source in sources]
    load_tools(checked)  # two files defining one name
    return checked


def checked_model(spec: str, *, settings: ModelSettings | None = None) -> str:
    """The model spec checked, as a task records it (a script's path as `portable_model` has it).

    Args:
        settings: the agent's model settings, which the model's provider must be able to send.

    Raises:
        InputError: the spec names no usable model, or its provider cannot
            send one of `settings` (`UnsupportedSetting`); no network is used.
    """
    provider = resolve_model(spec)
    check_settings(provider, settings)
    if isinstance(provider, ScriptedModel):
        return portable_model(f"scripted:{provider.path}")  # one an endpoint names too (NAME:x.json)
    return spec.strip()


def _checked_tools(source: str, option: str) -> str:
    """A tool source checked: a .py file (recorded relative to the project root) or a module."""
    if "\x00" in source:  # no path or module name holds one; the OS would refuse it with a ValueError
        raise InputError(f"{option}: {source!r} holds a NUL character; give a .py file or a module")
    file = Path(source).expanduser().resolve()
    if not file.is_file() and _is_module_name(source):
        found = _tools_of(source, option)
        recorded = source
    else:
        if not file.is_file():
            raise InputError(
                f"{option}: no file at {file}; give a .py file with @ratchet.tool functions, or a module"
            )
        if file.suffix != ".py":
            raise InputError(
                f"{option}: {source} is not a .py file; give a Python file with @ratchet.tool functions"
            )
        found = _tools_of(str(file), option)
        recorded = portable_path(file)
    if not found:
        raise InputError(f"{option}: {source} defines no tool; mark its functions with @ratchet.tool")
    clashes = sorted(BUILTIN_TOOL_NAMES.intersection(t.name for t in found))
    if clashes:
        raise InputError(f"{option}: {source} defines {clashes[0]!r}, the name of a built-in tool; rename it")
    return recorded


def _tools_of(source: str, option: str) -> list[Tool]:
    """The tools `source` defines; loading it is checked first (`load_module`), and may be refused."""
    try:
        return load_tools([source])
    except CodeUnavailable as error:  # refused, missing, or raised (or exited) when imported
        raise InputError(f"{option}: {error.message}") from None


def _is_module_name(text: str) -> bool:
    """``pkg.tools``, not ``tools.py`` nor a path."""
    return not text.endswith(".py") and all(part.isidentifier() for part in text.split("."))
