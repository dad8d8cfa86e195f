"""``ratchet.toml`` as the commands' defaults: what the file sets is an option's value when neither
its flag nor its environment variable gives one.

Click takes an option's value from the command line, else its environment
variable, else the context's ``default_map``, else the option's default:
so the file's settings go in the ``default_map`` of the command that runs,
each under the option that reads the environment variable the setting pairs
with (`ratchet.config.schema.ENVIRONMENT`). Every command that has a setting
thus takes it the same way, with the same precedence, and an option that
reads no such variable takes nothing from the file (the demo's ``--store``,
``run --name``).

The file is looked for once, as the command starts; without one nothing is
imported. A file that says something it may not stops every command but
``--help`` and ``--version`` of the program itself: one line, exit 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import choose_config, find_config, load_config

__all__ = ["command_defaults"]


class FromFile:
    """A setting of the config file as an option's default: Click calls it for the value, and
    ``--help`` shows it as people may see it (a store URL's password hidden), naming the file."""

    def __init__(self, value: object, *, variable: str, source: Path) -> None:
        self.value = value
        self._variable = variable
        self._source = source

    def __call__(self) -> object:
        return self.value

    def __str__(self) -> str:
        return f"{_shown(self._variable, self.value)} (from {self._source})"


def command_defaults(command: Any, *, config: Path | None) -> dict[str, Any] | None:
    """The ``default_map`` of `command` (a Click command or group): the config file's settings, by
    the name of the option that takes each; None when there is no file or it sets nothing.

    Args:
        command: the command about to run.
        config: the file ``ratchet --config`` names, or None.

    Raises:
        InputError: the file named does not exist, or the file is not valid
            (an unknown key, a wrong type, broken TOML), in one line.
    """
    if config is not None:
        choose_config(config, given_by="--config")
    path = find_config()
    if path is None:
        return None
    settings = load_config(path).settings()
    return _defaults(command, settings, path) or None


def _defaults(command: Any, settings: dict[str, object], source: Path) -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for param in command.params:
        envvar = param.envvar
        for variable in [envvar] if isinstance(envvar, str) else list(envvar or ()):
            if variable in settings:
                value = settings[variable]
                if getattr(param, "multiple", False) != isinstance(value, list):
                    # A chain for an option of one model takes its first; one model fills a chain.
                    value = [value] if not isinstance(value, list) else value[0]
                defaults[param.name] = FromFile(value, variable=variable, source=source)
                break
    # A group's subcommands take theirs from the group's map, under their names.
    for name, subcommand in getattr(command, "commands", {}).items():
        nested = _defaults(subcommand, settings, source)
        if nested:
            defaults[name] = nested
    return defaults


def _shown(variable: str, value: object) -> str:
    if variable == "RATCHET_STORE":
        from ..store.redact import redact_url  # only --help shows a default

        return redact_url(str(value))
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return str(value)
