"""The dashboard's page shell and static assets (docs/serve.md, "The dashboard").

One HTML shell is served for every page (``/``, ``/tasks/{task_id}``,
``/compare``, ``/sessions``, ``/schedules``, ``/workers``); its script routes on the path and reads
everything it shows from the API with the tab's bearer token. The shell and
the assets hold no data and no secret, which is why the guard lets a browser
navigation (which cannot send an ``Authorization`` header) fetch them without
a token: `is_public_page` names exactly those requests, nothing else.
"""

from __future__ import annotations

import functools
import re
from importlib import resources

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

__all__ = ["ASSETS", "is_public_page", "router"]

_STATIC = resources.files("ratchet.serve") / "static"

_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}

ASSETS: frozenset[str] = frozenset(
    entry.name
    for entry in _STATIC.iterdir()
    if entry.is_file() and entry.name != "index.html" and "." + entry.name.rpartition(".")[2] in _MEDIA_TYPES
)
"""The file names served under ``/static/``: what the package ships, and nothing a request could name."""

_PAGE_PATH = re.compile(r"/(?:|sessions|schedules|workers|compare|tasks/[^/]+)")
_PUBLIC_METHODS = frozenset({"GET", "HEAD"})

# The page runs only its own script and styles, and may be framed by no other site.
_SHELL_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

router = APIRouter(include_in_schema=False)


def is_public_page(method: str, path: str) -> bool:
    """Whether this request is for the shell or an asset, which the guard serves without a token."""
    if method not in _PUBLIC_METHODS:
        return False
    if path.startswith("/static/"):
        return path.removeprefix("/static/") in ASSETS
    return _PAGE_PATH.fullmatch(path) is not None


@functools.cache
def _body(name: str) -> bytes:
    return (_STATIC / name).read_bytes()  # package data: read once, as the module list above


def _file(name: str) -> Response:
    media_type = _MEDIA_TYPES["." + name.rpartition(".")[2]]
    return Response(_body(name), media_type=media_type, headers=_SHELL_HEADERS)


async def _shell() -> Response:
    return _file("index.html")


for _path in ("/", "/tasks/{task_id}", "/compare", "/sessions", "/schedules", "/workers"):
    router.add_api_route(_path, _shell, methods=["GET", "HEAD"], response_class=Response)


@router.api_route("/static/{name}", methods=["GET", "HEAD"], response_class=Response)
async def asset(name: str) -> Response:
    """A file of the dashboard; a name the package does not ship is 404."""
    if name not in ASSETS:
        return JSONResponse({"detail": f"the dashboard has no file {name[:80]!r}"}, status_code=404)
    return _file(name)
