"""Named model endpoints, from the project's config file.

``ratchet.toml`` in the current directory (or the file ``ratchet --config``
or ``RATCHET_CONFIG`` names: `ratchet.config`) may declare endpoints::

    [endpoints.gpu]
    provider = "openai"                   # the protocol: a provider prefix
    base_url = "http://gpu-box:8000/v1"
    api_key_env = "GPU_BOX_KEY"           # the variable holding the key (optional)
    timeout = 600                         # seconds one HTTP exchange may take (optional)
    priced_as = "openai:gpt-4o"           # the model its calls bill as (optional)

and ``gpu:qwen2.5-7b`` is then that provider, at that URL, with that key.
``priced_as`` is for a server no price table knows that bills as a model one
does (a gateway in front of OpenAI): its calls are priced as that model, so
``--max-cost`` holds; a model no table prices is refused when the endpoint is
used (`ratchet.pricing.check_priced_as`).
The key itself never appears in the file, the command line or the database:
only the name of the variable that holds it. The file is read, and checked
as a whole, by `ratchet.config.load_config`, the one reader of that file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ratchet.config import find_config, load_config
from ratchet.errors import InputError
from ratchet.pricing import check_priced_as

__all__ = ["Endpoint", "find_endpoint"]


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
        priced_as: the model its calls are priced as (``openai:gpt-4o``), or
            None: priced by the URL, as the price table knows it.
    """

    name: str
    provider: str
    base_url: str | None
    api_key_env: str | None
    source: str
    timeout: float | None = None
    priced_as: str | None = None

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


def find_endpoint(name: str) -> Endpoint | None:
    """The endpoint named `name` in the config file, or None (no file, or no such endpoint).

    The file is read on each call: it is small, and a long-running worker
    then sees an endpoint added since it started.

    Raises:
        InputError: the file chosen does not exist, is not valid TOML, or
            says something it may not (in this table or any other), or the
            endpoint's ``priced_as`` names a model no price table knows.
    """
    path = find_config()
    if path is None:
        return None
    table = load_config(path).endpoints.get(name)
    if table is None:
        return None
    if table.priced_as is not None:
        check_priced_as(table.priced_as, where=f"{path}, [endpoints.{name}]: priced_as")
    return Endpoint(
        name=name,
        provider=table.provider,
        base_url=table.base_url,
        api_key_env=table.api_key_env,
        source=str(path),
        timeout=table.timeout,
        priced_as=table.priced_as,
    )
