"""Deprecated alias of `ratchet.records`, kept for one release: import records from there.

`ratchet.model` held every record until the records became a package of their
own (one module a concept). Programs that import from here keep working until
the next release; nothing in Ratchet imports this module.
"""

from __future__ import annotations

from .records import *  # noqa: F403
from .records import __all__ as __all__
