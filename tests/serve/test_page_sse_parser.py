"""The dashboard's own SSE reader (static/api.js), run by Node where it is installed.

The page reads the streams with fetch() (an EventSource cannot send the
token), so it parses ``text/event-stream`` itself; these check that parser
against what the spec and our server send, split into chunks at awkward places.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from importlib import resources

import pytest

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

_HARNESS = """
const { SseParser } = await import(process.argv[1]);
const chunks = JSON.parse(process.argv[2]);
const seen = [];
const parser = new SseParser((message) => seen.push(message));
for (const chunk of chunks) parser.push(chunk);
console.log(JSON.stringify(seen));
"""


def parse(*chunks: str) -> list[dict[str, str]]:
    """The messages the page's parser finds in `chunks`, read in that order."""
    api_js = resources.files("ratchet.serve") / "static" / "api.js"
    assert NODE is not None
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", _HARNESS, f"file://{api_js}", json.dumps(chunks)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    found: list[dict[str, str]] = json.loads(done.stdout)
    return found


def test_messages_with_ids_types_and_heartbeats() -> None:
    stream = (
        'event: start\nid: 41\ndata: {"position":41}\n\n'
        ": ping - 2026-11-23 21:40:02\n\n"
        'id: 42\ndata: {"kind":"created"}\n\n'
        'event: end\ndata: {"status":"completed"}\n\n'
    )

    assert parse(stream) == [
        {"type": "start", "data": '{"position":41}', "id": "41"},
        {"type": "message", "data": '{"kind":"created"}', "id": "42"},
        {"type": "end", "data": '{"status":"completed"}'},
    ]


def test_a_message_split_anywhere_is_read_once_whole() -> None:
    stream = 'id: 7\r\ndata: {"seq":7,\r\ndata: "kind":"x"}\r\n\r\nid: 8\ndata: 8\n\n'
    whole = parse(stream)

    for cut in range(1, len(stream)):
        assert parse(stream[:cut], stream[cut:]) == whole, cut
    assert whole == [
        {"type": "message", "data": '{"seq":7,\n"kind":"x"}', "id": "7"},
        {"type": "message", "data": "8", "id": "8"},
    ]


def test_an_unfinished_message_waits_for_its_blank_line() -> None:
    assert parse("id: 9\ndata: half") == []
    assert parse("id: 9\n\n") == []  # an id alone dispatches nothing
    assert parse("data:no space\n\n", "data\n\n") == [
        {"type": "message", "data": "no space"},
        {"type": "message", "data": ""},
    ]
