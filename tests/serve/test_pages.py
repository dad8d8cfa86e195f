"""Item 3: the dashboard's shell and assets, served by the app; only they pass the guard without a token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from ratchet.runtime import Runtime
from ratchet.serve.pages import ASSETS
from ratchet.store import StateStore, open_store
from ratchet.trust.tokens import load_tokens

from ..helpers.people_flows import mail
from .support import client_for

TOKEN = "s3cret-dashboard-token"
PAGES = ["/", "/tasks/t-123", "/compare", "/sessions", "/schedules", "/workers"]


@pytest.fixture
async def memory_store() -> AsyncIterator[StateStore]:
    store = await open_store("memory://")
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture
async def guarded(memory_store: StateStore, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an app with a token file, sending no token."""
    token_file = tmp_path / "tokens"
    token_file.write_text(f"{TOKEN}\n")
    async with client_for(memory_store, tokens=load_tokens(token_file)) as client:
        yield client


@pytest.mark.parametrize("path", PAGES)
async def test_each_page_path_serves_the_shell_without_a_token(guarded: httpx.AsyncClient, path: str) -> None:
    answer = await guarded.get(path)

    assert answer.status_code == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert '<form id="login"' in answer.text
    assert '<script type="module" src="/static/main.js">' in answer.text
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    head = await guarded.head(path)
    assert head.status_code == 200


async def test_the_shell_holds_no_task_data_and_no_secret(
    memory_store: StateStore, tmp_path: Path, ledger: str
) -> None:
    await Runtime(memory_store).submit(mail, {"ledger": ledger, "to": "7731"}, name="secret-launch")
    token_file = tmp_path / "tokens"
    token_file.write_text(f"{TOKEN}\n")
    async with client_for(memory_store, tokens=load_tokens(token_file)) as client:
        listing = await client.get("/", headers={"authorization": f"Bearer {TOKEN}"})
        without = await client.get("/")
        assets = [await client.get(f"/static/{name}") for name in sorted(ASSETS)]

    for answer in [listing, without, *assets]:
        assert answer.status_code == 200
        assert "secret-launch" not in answer.text and "7731" not in answer.text
        assert TOKEN not in answer.text
    assert listing.text == without.text  # the token changes nothing in the shell


async def test_each_asset_is_served_with_its_content_type(guarded: httpx.AsyncClient) -> None:
    media_types = {
        "js": "text/javascript; charset=utf-8",
        "css": "text/css; charset=utf-8",
        "svg": "image/svg+xml",
    }
    assert {"main.js", "api.js", "tasks.js", "task.js", "style.css"} <= ASSETS

    for name in sorted(ASSETS):
        answer = await guarded.get(f"/static/{name}")

        assert answer.status_code == 200, name
        assert answer.headers["content-type"] == media_types[name.rpartition(".")[2]]
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.content


async def test_every_module_the_shell_and_scripts_import_is_served(guarded: httpx.AsyncClient) -> None:
    shell = (await guarded.get("/")).text
    scripts = {name for name in ASSETS if name.endswith(".js")}
    for name in scripts:
        text = (await guarded.get(f"/static/{name}")).text
        for imported in re.findall(r'from "\./([^"]+)"', text):
            assert imported in ASSETS, f"{name} imports {imported}, which is not shipped"
    assert "main.js" in scripts and "/static/style.css" in shell


async def test_an_unknown_asset_is_404(memory_store: StateStore) -> None:
    async with client_for(memory_store) as client:
        missing = await client.get("/static/nope.js")
        climbing = await client.get("/static/..%2Findex.html")
        nested = await client.get("/static/sub/main.js")

    assert missing.status_code == 404
    assert climbing.status_code == nested.status_code == 404


@pytest.mark.parametrize(
    "path",
    [
        "/api/tasks",
        "/api/stream",
        "/api/openapi.json",
        "/metrics",
        "/static/nope.js",  # not a shipped file: the guard does not know it
        "/staticmain.js",
        "/static/../api/tasks",
        "/api/static/main.js",
        "/tasks/t-1/journal",
        "/tasks/t-1/",
        "/sessionsx",
    ],
)
async def test_every_other_path_still_needs_the_token(guarded: httpx.AsyncClient, path: str) -> None:
    answer = await guarded.get(path)

    assert answer.status_code == 401


async def test_only_reads_of_the_shell_pass_without_a_token(guarded: httpx.AsyncClient) -> None:
    posted = await guarded.post("/", json={})
    options = await guarded.options("/static/main.js")

    assert posted.status_code == options.status_code == 401


async def test_the_pages_are_not_in_the_api_schema(memory_store: StateStore) -> None:
    async with client_for(memory_store) as client:
        schema = (await client.get("/api/openapi.json")).json()

    assert not [path for path in schema["paths"] if not path.startswith("/api/")]


async def test_no_script_writes_markup(guarded: httpx.AsyncClient) -> None:
    """Task goals and tool arguments are user and model data: the scripts put in text, never HTML."""
    for name in sorted(name for name in ASSETS if name.endswith(".js")):
        text = (await guarded.get(f"/static/{name}")).text
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
            assert sink not in text, f"{name} uses {sink}"
