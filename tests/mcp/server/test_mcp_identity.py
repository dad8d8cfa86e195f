"""Who a connection acts as, and who may connect: --agent, the token file, loopback, the extra."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ...crash.harness import REPO
from ...helpers.cli import assert_one_line_error
from .support import connect, environment, http_server, mcp_command, whoami_command, with_token

TOKENS = "# who may connect\nalice token-of-alice\n\ntoken-of-the-default\n"


def ratchet_mcp(*args: str, preamble: str = "") -> subprocess.CompletedProcess[str]:
    """Run `ratchet mcp ARGS` to its end (it must refuse to start), in a fresh interpreter."""
    code = f"{preamble}\nfrom ratchet.cli import main\nmain({list(args)!r})"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=environment(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def store_of(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ratchet.db'}"


async def whoami(client: Client) -> str:
    result = await client.call_tool("whoami", {})
    return str(result.structured_content["result"]) if result.structured_content else ""


async def test_over_stdio_a_client_acts_as_the_agent_given(tmp_path: Path) -> None:
    async with connect("stdio", whoami_command(store_of(tmp_path), "--agent", "bob")) as client:
        named = await whoami(client)
    async with connect("stdio", whoami_command(store_of(tmp_path))) as client:
        nobody = await whoami(client)

    assert (named, nobody) == ("'bob'", "None")


async def test_over_http_each_token_acts_as_its_agent_and_other_requests_are_refused(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(TOKENS, encoding="utf-8")
    command = whoami_command(store_of(tmp_path), "--agent", "bob", "--token-file", str(tmp_path / "tokens"))

    with http_server(command) as endpoint:
        async with Client(with_token(endpoint, "token-of-alice")) as client:
            alice = await whoami(client)
        async with Client(with_token(endpoint, "token-of-the-default")) as client:
            default = await whoami(client)
        refused = [
            httpx2.post(endpoint, json={}, headers=headers).status_code
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "token-of-alice"})
        ]
        with pytest.raises(ExceptionGroup) as failed:  # the SDK's client fails as its transport task does
            async with Client(with_token(endpoint, "wrong")) as client:
                await client.list_resources()

    assert (alice, default) == ("'alice'", "'bob'")
    assert refused == [401, 401, 401]
    assert failed.group_contains(MCPError, depth=None)


async def test_ratchet_mcp_over_http_needs_the_token_too(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(TOKENS, encoding="utf-8")
    command = mcp_command(store_of(tmp_path), "--token-file", str(tmp_path / "tokens"))

    with http_server(command) as endpoint:
        async with Client(with_token(endpoint, "token-of-alice")) as client:
            templates = await client.list_resource_templates()
        status = httpx2.post(endpoint, json={}).status_code

    assert len(templates.resource_templates) == 4
    assert status == 401


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("--transport", "http", "--host", "0.0.0.0"),
            "refusing to serve HTTP on 0.0.0.0 without --token-file",
        ),
        (("--transport", "http", "--host", "192.0.2.1"), "without --token-file"),
        (("--token-file", "tokens"), "--token-file is for --transport http"),
        (("--agent", " "), "--agent is empty"),
    ],
)
def test_ratchet_mcp_refuses_to_start_unsafely(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    done = ratchet_mcp("mcp", "--store", store_of(tmp_path), *args)

    assert_one_line_error(done, expected)


def test_a_bad_token_file_is_one_line_that_never_shows_a_token(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("alice token-of-alice extra\n", encoding="utf-8")
    (tmp_path / "twice").write_text("a secret-one\nb secret-one\n", encoding="utf-8")

    bad = ratchet_mcp("mcp", "--transport", "http", "--token-file", str(tmp_path / "tokens"))
    twice = ratchet_mcp("mcp", "--transport", "http", "--token-file", str(tmp_path / "twice"))
    missing = ratchet_mcp("mcp", "--transport", "http", "--token-file", str(tmp_path / "none"))

    assert "token-of-alice" not in assert_one_line_error(bad, "line 1 of the token file", "has 3 words")
    assert "secret-one" not in assert_one_line_error(twice, "line 2", "repeats a token")
    assert_one_line_error(missing, "cannot read the token file")


def test_without_the_mcp_extra_the_command_names_it_and_its_help_still_shows(tmp_path: Path) -> None:
    without_sdk = "import sys; sys.modules['mcp'] = None"

    done = ratchet_mcp("mcp", "--store", store_of(tmp_path), preamble=without_sdk)
    helped = ratchet_mcp("mcp", "--help", preamble=without_sdk)

    assert_one_line_error(done, "`ratchet mcp` needs the MCP SDK: pip install 'ratchet-runtime[mcp]'")
    assert helped.returncode == 0, helped.stderr
    assert "--token-file" in helped.stdout


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        done = ratchet_mcp("mcp", "--store", store_of(tmp_path), "--transport", "http", "--port", str(port))

    assert_one_line_error(done, f"cannot listen on 127.0.0.1:{port}", "choose another --port")


def test_ratchet_mcp_over_http_answers_only_the_names_it_serves(tmp_path: Path) -> None:
    # As for `ratchet serve` (tests/security/test_dns_rebinding.py): a page that rebound its name to
    # 127.0.0.1, or another local service's page, drives nothing.
    command = mcp_command(store_of(tmp_path), "--allowed-host", "mcp.example")
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    accept = {"accept": "application/json, text/event-stream"}

    with http_server(command) as endpoint:
        port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
        other = port + 1 if port < 65535 else port - 1

        def post(**headers: str) -> httpx2.Response:
            return httpx2.post(endpoint, json=initialize, headers={**accept, **headers}, timeout=30)

        rebound = post(host=f"attacker.example:{port}", origin=f"http://attacker.example:{port}")
        foreign_origin = post(origin=f"http://attacker.example:{port}")
        other_port = post(origin=f"http://localhost:{other}")
        allowed = post(host=f"mcp.example:{port}", origin="https://mcp.example")
        own = post(origin=f"http://127.0.0.1:{port}")

    assert rebound.status_code == 421 and "attacker.example" in rebound.json()["detail"]
    assert foreign_origin.status_code == other_port.status_code == 403
    assert allowed.status_code not in (403, 421) and own.status_code not in (403, 421), (allowed, own)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--allowed-host", "mcp.example"), "--allowed-host is for --transport http"),
        (("--transport", "http", "--allowed-host", "*"), "--allowed-host '*'"),
        (("--transport", "http", "--allowed-host", "http://mcp.example/"), "is not a host name"),
    ],
)
def test_ratchet_mcp_refuses_a_name_it_cannot_serve_safely(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    done = ratchet_mcp("mcp", "--store", store_of(tmp_path), *args)

    assert_one_line_error(done, expected)
