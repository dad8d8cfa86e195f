"""`ratchet serve`: the HTTP API over a store and its live streams (docs/serve.md).

FastAPI is imported only by this package's modules, so the rest of Ratchet
runs without the ``[serve]`` extra.
"""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
