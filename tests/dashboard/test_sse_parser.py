"""The dashboard's own SSE reader (static/api.js), run in the browser the dashboard runs in.

The page reads the streams with fetch() (an EventSource cannot send the
token), so it parses ``text/event-stream`` itself; these check that parser
against what the spec and our server send, split into chunks at awkward places.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from importlib import resources
from urllib.parse import quote

import pytest
from playwright.sync_api import Browser

Parse = Callable[..., list[dict[str, str]]]

# The module is imported as it is shipped (from a data: URL, so no server is needed; the module it
# imports likewise); the messages come back as JSON so that a field the parser leaves undefined is
# absent, not null.
_HARNESS = """async ([source, chunks]) => {
  const { SseParser } = await import("data:text/javascript;charset=utf-8," + encodeURIComponent(source));
  const seen = [];
  const parser = new SseParser((message) => seen.push(message));
  for (const chunk of chunks) parser.push(chunk);
  return JSON.stringify(seen);
}"""


@pytest.fixture(scope="module")
def parse(browser: Browser) -> Iterator[Parse]:
    """The messages the page's parser finds in the chunks given, read in that order."""
    static = resources.files("ratchet.serve") / "static"
    imported = "data:text/javascript;charset=utf-8," + quote((static / "json.js").read_text())
    source = (static / "api.js").read_text().replace('"./json.js"', json.dumps(imported))
    page = browser.new_page()

    def parse_chunks(*chunks: str) -> list[dict[str, str]]:
        found: list[dict[str, str]] = json.loads(page.evaluate(_HARNESS, [source, list(chunks)]))
        return found

    yield parse_chunks
    page.close()


def test_messages_with_ids_types_and_heartbeats(parse: Parse) -> None:
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


def test_a_message_split_anywhere_is_read_once_whole(parse: Parse) -> None:
    stream = 'id: 7\r\ndata: {"seq":7,\r\ndata: "kind":"x"}\r\n\r\nid: 8\ndata: 8\n\n'
    whole = parse(stream)

    for cut in range(1, len(stream)):
        assert parse(stream[:cut], stream[cut:]) == whole, cut
    assert whole == [
        {"type": "message", "data": '{"seq":7,\n"kind":"x"}', "id": "7"},
        {"type": "message", "data": "8", "id": "8"},
    ]


def test_an_unfinished_message_waits_for_its_blank_line(parse: Parse) -> None:
    assert parse("id: 9\ndata: half") == []
    assert parse("id: 9\n\n") == []  # an id alone dispatches nothing
    assert parse("data:no space\n\n", "data\n\n") == [
        {"type": "message", "data": "no space"},
        {"type": "message", "data": ""},
    ]
