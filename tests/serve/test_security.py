"""Item 4: bearer tokens, cross-site refusal, size limits, no secret in an answer, loopback by default."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from ratchet.errors import InputError
from ratchet.serve import create_app
from ratchet.store import StateStore, open_store
from ratchet.trust.tokens import load_tokens

from .support import JSON, client_for


async def test_with_a_token_file_every_request_needs_its_token(api_store: StateStore, tmp_path: Path) -> None:
    token_file = tmp_path / "tokens"
    token_file.write_text("# who may steer\ns3cret-token\n")
    async with client_for(api_store, tokens=load_tokens(token_file)) as client:
        without = await client.get("/api/health")
        wrong = await client.get("/api/tasks", headers={"authorization": "Bearer nope"})
        schema = await client.get("/api/openapi.json")
        right = await client.get("/api/tasks", headers={"authorization": "Bearer s3cret-token"})

    assert without.status_code == wrong.status_code == schema.status_code == 401
    assert without.headers["www-authenticate"].startswith("Bearer")
    assert "s3cret-token" not in without.text + wrong.text
    assert right.status_code == 200


async def test_a_state_change_from_another_site_is_refused(api_store: StateStore) -> None:
    async with client_for(api_store) as client:
        form = await client.post(
            "/api/tasks/t1/cancel", content=b"reason=x", headers={"content-type": "text/plain"}
        )
        cross_site = await client.post(
            "/api/tasks/t1/cancel", json={}, headers={"sec-fetch-site": "cross-site"}
        )
        other_origin = await client.post(
            "/api/tasks/t1/cancel", json={}, headers={"origin": "https://evil.example"}
        )
        same_origin = await client.post(
            "/api/tasks/t1/cancel",
            json={},
            headers={"origin": "http://127.0.0.1:8000", "sec-fetch-site": "same-origin"},
        )
        read_cross_site = await client.get("/api/health", headers={"sec-fetch-site": "cross-site"})

    assert form.status_code == 415
    assert cross_site.status_code == other_origin.status_code == 403
    assert same_origin.status_code == 404  # it passed the guard: the task does not exist
    assert read_cross_site.status_code == 200


async def _chunks() -> AsyncIterator[bytes]:
    for chunk in (b'{"reason": "', b"x" * 2000, b'"}'):
        yield chunk


async def test_a_body_over_the_limit_is_refused_with_413(api_store: StateStore) -> None:
    async with client_for(api_store, max_body_bytes=1000) as client:
        big = await client.post("/api/tasks/t1/deny", json={"reason": "x" * 2000})
        chunked = await client.post("/api/tasks/t1/deny", content=_chunks(), headers=JSON)
        small = await client.post("/api/tasks/t1/deny", json={"reason": "x"})

    assert big.status_code == chunked.status_code == 413
    assert big.json() == {"detail": "the request body is larger than 1000 bytes"}
    assert small.status_code == 404


async def test_no_secret_in_any_answer(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The local server trusts its socket: a password in the URL is accepted and ignored.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-shown")
    url = postgres_url + ("&" if "?" in postgres_url else "?") + "password=hunter2-pw"
    store = await open_store(url)
    try:
        async with client_for(store) as client:
            answers = [
                await client.get(path)
                for path in (
                    "/api/health",
                    "/api/ready",
                    "/api/tasks",
                    "/api/workers",
                    "/api/tasks/x",
                    "/api/no",
                )
            ]
            answers.append(
                await client.post("/api/tasks", json={"instruction": "hi", "model": "openai:gpt-4o-mini"})
            )
            answers.append(await client.get("/api/openapi.json"))
    finally:
        await store.close()

    assert [a.status_code for a in answers[:3]] == [200, 200, 200]
    assert all("hunter2-pw" not in a.text and "sk-never-shown" not in a.text for a in answers)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ratchet(*args: str, cwd: Path) -> list[str]:
    return [sys.executable, "-m", "ratchet", *args]


def test_serve_refuses_another_address_without_a_token_file(tmp_path: Path) -> None:
    done = subprocess.run(
        _ratchet("serve", "--store", f"sqlite:///{tmp_path}/r.db", "--host", "0.0.0.0", cwd=tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "--token-file" in done.stderr


def test_serve_with_a_store_it_cannot_reach_says_so_in_one_line_without_its_password(tmp_path: Path) -> None:
    url = "postgresql://ratchet:pw-never-shown@127.0.0.1:1/ratchet"  # nothing listens on port 1
    done = subprocess.run(
        _ratchet("serve", "--store", url, "--port", str(_free_port()), cwd=tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot connect") and done.stderr.count("\n") == 1
    assert "pw-never-shown" not in done.stderr + done.stdout


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            _ratchet("serve", "--store", f"sqlite:///{tmp_path}/r.db", "--port", str(port), cwd=tmp_path),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert done.returncode == 2
    assert done.stderr == (
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "choose another --port or --host\n"
    )


def test_serve_answers_over_http_on_loopback_with_its_token(tmp_path: Path) -> None:
    port = _free_port()
    (tmp_path / "tokens").write_text("abc123\n")
    server = subprocess.Popen(
        _ratchet(
            "serve",
            "--store",
            f"sqlite:///{tmp_path}/r.db",
            "--port",
            str(port),
            "--token-file",
            "tokens",
            cwd=tmp_path,
        ),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "RATCHET_MODEL": "scripted:none.json"},
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                health = httpx.get(f"{base}/api/health", headers={"authorization": "Bearer abc123"})
                break
            except httpx.ConnectError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail("ratchet serve did not answer")
                time.sleep(0.1)
        refused = httpx.get(f"{base}/api/tasks")
        ready = httpx.get(f"{base}/api/ready", headers={"authorization": "Bearer abc123"})
    finally:
        server.terminate()
        server.wait(timeout=30)

    assert health.json() == {"status": "ok"}
    assert refused.status_code == 401
    assert ready.status_code == 200


async def test_a_body_json_does_not_allow_is_refused_not_changed(api_store: StateStore) -> None:
    async with client_for(api_store) as client:
        nan = await client.post(
            "/api/tasks/t1/messages", content=b'{"name": "x", "payload": NaN}', headers=JSON
        )
        huge = await client.post(
            "/api/tasks/t1/messages", content=b'{"name": "x", "payload": 1e999}', headers=JSON
        )
        deep = await client.post(
            "/api/tasks/t1/messages", content=b"[" * 100_000 + b"]" * 100_000, headers=JSON
        )
        unknown_field = await client.post("/api/tasks/t1/deny", json={"reason": "x", "why": "y"})
        lone = await client.post(
            "/api/tasks/t1/approve", content=b'{"edit_args": {"to": "\\ud800"}}', headers=JSON
        )
        pair = await client.post(
            "/api/tasks/t1/messages", content=b'{"name": "x", "payload": "\\ud83d\\ude00"}', headers=JSON
        )

    assert lone.status_code == 422, lone.text  # it answered 500: no store can keep half a pair
    assert lone.json()["detail"] == "the body holds a lone surrogate (\\ud800), which is not Unicode text"
    assert pair.status_code != 422, pair.text  # a whole pair is a character (here: no such task, 404)
    assert nan.status_code == huge.status_code == 422 and "NaN or Infinity" in nan.json()["detail"]
    assert deep.status_code == 422 and "nested too deeply" in deep.json()["detail"]
    assert unknown_field.status_code == 422 and "why" in unknown_field.json()["detail"]


async def test_the_server_answers_to_its_own_names_and_the_names_allowed(
    api_store: StateStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RATCHET_ALLOWED_HOSTS", "env.example, other.example")
    allowed = ["ratchet.example", "proxy.example:8443", "[2001:db8::7]"]
    async with client_for(api_store, allowed_hosts=allowed) as client:  # it serves 127.0.0.1:8000

        async def status(host: str, origin: str | None = None) -> int:
            headers = {"host": host} | ({"origin": origin} if origin else {})
            return (await client.get("/api/health", headers=headers)).status_code

        admitted = [
            await status(host)
            for host in (
                "127.0.0.1:8000",
                "localhost:8000",
                "LOCALHOST:8000",
                "[::1]:8000",
                "ratchet.example",
                "ratchet.example:9999",
                "proxy.example:8443",
                "[2001:db8::7]:80",
                "env.example:8000",
                "other.example",
            )
        ] + [
            await status("ratchet.example", "https://ratchet.example"),
            await status("127.0.0.1:8000", "http://localhost:8000"),
        ]
        misdirected = [
            await status(host)
            for host in (
                "attacker.example:8000",
                "localhost:8001",
                "127.0.0.1",
                "proxy.example:8444",
                "proxy.example",
                "ratchet.example.attacker.example",
                "127.0.0.1:8000@attacker.example",
                "",
            )
        ]
        foreign = [
            await status("127.0.0.1:8000", origin)
            for origin in ("http://attacker.example:8000", "http://localhost:3000", "null", "file://")
        ]

    assert admitted == [200] * len(admitted)
    assert misdirected == [421] * len(misdirected)
    assert foreign == [403] * len(foreign)


async def test_any_name_is_admitted_only_with_a_token_file(api_store: StateStore, tmp_path: Path) -> None:
    token_file = tmp_path / "tokens"
    token_file.write_text("s3cret-token\n")
    bearer = {"authorization": "Bearer s3cret-token"}

    with pytest.raises(InputError, match=r"--allowed-host '\*'.*needs --token-file"):
        create_app(api_store, allowed_hosts=["*"])
    async with client_for(api_store, tokens=load_tokens(token_file), allowed_hosts=["*"]) as client:
        anywhere = await client.get("/api/health", headers={"host": "any.example:1", **bearer})
        without_token = await client.get("/api/health", headers={"host": "any.example:1"})

    assert anywhere.status_code == 200
    assert without_token.status_code == 401


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--allowed-host", "*"), "--allowed-host '*' lets any web page's name through"),
        (("--allowed-host", "https://ratchet.example/"), "is not a host name"),
        (("--allowed-host", "ratchet.example:99999"), "is not a host name"),
    ],
)
def test_serve_refuses_a_name_it_cannot_serve_safely(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    done = subprocess.run(
        _ratchet("serve", "--store", f"sqlite:///{tmp_path}/r.db", *args, cwd=tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
