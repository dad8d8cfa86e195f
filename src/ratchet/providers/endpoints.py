"""Named model endpoints, from the project's optional config file.

``ratchet.toml`` in the current directory (or the file ``RATCHET_CONFIG``
names) may declare endpoints::

    [endpoints.gpu]
    provider = "openai"                   # the protocol: a provider prefix
    base_url = "http://gpu-box:8000/v1"
    api_key_env = "GPU_BOX_KEY"           # the variable holding the key (optional)
    timeout = 600                         # seconds one HTTP exchange may take (optional)

and ``gpu:qwen2.5-7b`` is then that provider, at that URL, with that key.
The key itself never appears in the file, the command line or the database:
only the name of the variable that holds it.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ratchet.errors import InputError

__all__ = ["CONFIG_FILE", "CONFIG_VARIABLE", "Endpoint", "config_path", "find_endpoint"]

CONFIG_FILE = "ratchet.toml"
CONFIG_VARIABLE = "RATCHET_CONFIG"

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELDS = {"provider", "base_url", "api_key_env", "timeout"}
# A day: an exchange that may take longer is not waiting for a model.
MAX_TIMEOUT = 86400.0


@dataclass(frozen=True)
class Endpoint:
    """One ``[endpoints.NAME]`` table.

    Attributes:
        name: the prefix it gives model strings (``gpu`` in ``gpu:qwen2.5``).
        provider: the provider prefix that speaks its protocol (``openai``).
        base_url: the API root, or None for the provider's default.
        api_key_env: the environment variable holding its key, or None.
        source: the config file, for messages.
        timeout: seconds one HTTP exchange may take, or None for the
            provider's default (60 s): a model on a CPU answers slowly.
    """

    name: str
    provider: str
    base_url: str | None
    api_key_env: str | None
    source: str
    timeout: float | None = None

    def api_key(self) -> str | None:
        """The key, read from the environment now.

        Raises:
            InputError: ``api_key_env`` names a variable that is not set.
        """
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env)
        if not value:
            raise InputError(
                f"endpoint {self.name!r} ({self.source}) reads its API key from "
                f"{self.api_key_env}, which is not set"
            )
        return value


def config_path() -> Path:
    """The config file: ``RATCHET_CONFIG`` if set, else ``ratchet.toml`` in the current directory."""
    return Path(os.environ.get(CONFIG_VARIABLE) or CONFIG_FILE).expanduser()


def find_endpoint(name: str) -> Endpoint | None:
    """The endpoint named `name` in the config file, or None (no file, or no such endpoint).

    The file is read on each call: it is small, and a long-running worker
    then sees an endpoint added since it started.

    Raises:
        InputError: the file is not valid TOML, or the endpoint's table is malformed.
    """
    path = config_path()
    explicit = CONFIG_VARIABLE in os.environ and bool(os.environ[CONFIG_VARIABLE])
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise InputError(f"{CONFIG_VARIABLE} names {path}, which does not exist") from None
        return None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path} is not valid TOML: {error}") from None
    tables = config.get("endpoints", {})
    if not isinstance(tables, dict):
        raise InputError(f"{path}: 'endpoints' must be a table of [endpoints.NAME] tables")
    table = tables.get(name)
    if table is None:
        return None
    return _endpoint(name, table, str(path))


def _endpoint(name: str, table: object, source: str) -> Endpoint:
    where = f"{source}, [endpoints.{name}]"
    if not isinstance(table, dict):
        raise InputError(f"{where}: must be a table with provider, base_url and api_key_env")
    if not _NAME.match(name):
        raise InputError(f"{where}: name an endpoint with lower-case letters, digits, '_', '-' or '.'")
    if "api_key" in table:
        raise InputError(
            f"{where}: write no key in the file; put it in an environment variable "
            "and name that variable with api_key_env"
        )
    unknown = sorted(set(table) - _FIELDS)
    if unknown:
        raise InputError(
            f"{where}: unknown field {unknown[0]!r}; the fields are {', '.join(sorted(_FIELDS))}"
        )
    provider = table.get("provider")
    if not isinstance(provider, str) or not provider:
        raise InputError(f'{where}: give provider, the protocol it speaks (e.g. provider = "openai")')
    base_url = table.get("base_url")
    if base_url is not None and not (isinstance(base_url, str) and re.match(r"^https?://\S+$", base_url)):
        raise InputError(f'{where}: base_url must be an http(s) URL, e.g. "http://gpu-box:8000/v1"')
    variable = table.get("api_key_env")
    if variable is not None and not (isinstance(variable, str) and _VARIABLE.match(variable)):
        raise InputError(f'{where}: api_key_env must name an environment variable, e.g. "GPU_BOX_KEY"')
    timeout = table.get("timeout")
    if timeout is not None and not (
        isinstance(timeout, int | float) and not isinstance(timeout, bool) and 0 < timeout <= MAX_TIMEOUT
    ):
        raise InputError(f"{where}: timeout must be a number of seconds above 0, at most {MAX_TIMEOUT:g}")
    return Endpoint(
        name=name,
        provider=provider,
        base_url=base_url,
        api_key_env=variable,
        source=source,
        timeout=float(timeout) if timeout is not None else None,
    )
