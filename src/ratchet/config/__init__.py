"""The project's config file, ``ratchet.toml``: which file it is, and what it says, checked as a whole.

The file is ``ratchet.toml`` in the directory the command runs in (the
project root, as for the code a task may load), or the file ``ratchet
--config FILE`` or ``RATCHET_CONFIG`` names. Parent directories are not
searched: the project root is where the command runs, for the store's
default path, the code it may import and this file alike.

One file, one reader: `load_config` reads it with `tomllib` and checks every
section (`ratchet.config.schema`), the settings the commands take
(``[store]``, ``[model]``, ``[log]``, ``[worker]``) and the named model
endpoints (``[endpoints.NAME]``) alike. A mistake anywhere is one line naming
the file, the key and what to write (`InputError`), never ignored.

Finding the file costs a ``stat``; only a file that exists costs the
import of `tomllib` and pydantic, so a command run without one pays nothing.
"""

from __future__ import annotations

import contextvars
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from .schema import ProjectConfig

__all__ = [
    "CONFIG_FILE",
    "CONFIG_VARIABLE",
    "ProjectConfig",
    "choose_config",
    "find_config",
    "load_config",
]

CONFIG_FILE = "ratchet.toml"
CONFIG_VARIABLE = "RATCHET_CONFIG"

# The file this command was told to read (`ratchet --config FILE`), and how it was told; set
# once per command by the CLI, and seen wherever the command reads the file (a model's endpoint
# is resolved deep in a task's run). A context variable, so it needs no module state to reset.
_CHOSEN: contextvars.ContextVar[tuple[Path, str] | None] = contextvars.ContextVar(
    "ratchet_config_file", default=None
)


def choose_config(path: str | Path, *, given_by: str) -> None:
    """Read `path` as this command's config file from now on (``--config``), wherever it is read.

    Args:
        path: the file (it must exist when it is read).
        given_by: how it was given, for the message if it does not exist (``--config``).
    """
    _CHOSEN.set((Path(path).expanduser(), given_by))


def find_config() -> Path | None:
    """The config file to read: the one chosen (``--config``, then ``RATCHET_CONFIG``), else
    ``ratchet.toml`` in the current directory; None when there is none.

    Raises:
        InputError: the file chosen does not exist.
    """
    chosen = _CHOSEN.get()
    if chosen is None and os.environ.get(CONFIG_VARIABLE):
        chosen = (Path(os.environ[CONFIG_VARIABLE]).expanduser(), CONFIG_VARIABLE)
    if chosen is None:
        here = Path(CONFIG_FILE)
        return here if os.path.lexists(here) else None
    path, given_by = chosen
    if not os.path.lexists(path):
        raise InputError(f"{given_by} names {path}, which does not exist")
    return path


def load_config(path: str | Path | None = None) -> ProjectConfig:
    """What the config file says, every section checked (an empty config when there is no file).

    Args:
        path: the file to read; None reads the one `find_config` finds.

    Raises:
        InputError: the file cannot be read, is not UTF-8 TOML, or says
            something it may not (an unknown section or key, a value of the
            wrong type or out of its range), in one line naming the file and
            the key.
    """
    import tomllib

    from pydantic import ValidationError

    from .schema import ProjectConfig, config_problem

    found = find_config() if path is None else Path(path)
    if found is None:
        return ProjectConfig()
    try:
        text = found.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{found} is not UTF-8 text; save it as UTF-8") from None
    except OSError as error:
        raise InputError(f"cannot read {found}: {error.strerror or error}") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        # tomllib says where (line, column), never the text there: a password stays unquoted.
        raise InputError(f"{found} is not valid TOML: {error}") from None
    try:
        return ProjectConfig.model_validate(table)
    except ValidationError as error:
        raise InputError(config_problem(found, error)) from None


def __getattr__(name: str) -> Any:
    # The schema imports pydantic: loaded when it is first asked for, not by every command.
    if name == "ProjectConfig":
        from .schema import ProjectConfig

        return ProjectConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
