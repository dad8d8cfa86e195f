"""A real HTTP server on loopback that answers POSTs with scripted replies.

A test runs one for a block (``with LoopbackServer() as server:``) and queues
the replies it wants (`LoopbackServer.answer`); the server records every
request it receives (`LoopbackServer.received`) so the test can check what
the provider sent. A reply may stream (`Reply.stream`): server-sent events,
each written and flushed as an HTTP chunk of its own, and perhaps cut off
midway as a server that dies does. It runs in a thread of its own, so the provider
under test talks to it over a real socket, exactly as to a model server.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body (or raw text), a status, headers, a delay.

    With `stream` it answers ``text/event-stream`` instead of `body`: each
    item is one event's text (`sse`), written as one HTTP chunk after
    `stream_delay` seconds. `cut_after` closes the connection after that many
    events, without the chunked body's end: a stream cut midway. `gate` holds
    the events from index `gate_after` on until it is set (at most
    `GATE_WAIT` seconds; `LoopbackServer.gate_waits` says whether it was), so
    a test can tell that a client hands pieces on before the stream ends.
    """

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    stream: tuple[str, ...] | None = None
    stream_delay: float = 0.0
    cut_after: int | None = None
    gate: threading.Event | None = None
    gate_after: int = 0


GATE_WAIT = 10.0


def chat_completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    model: str = "some-model",
    usage: dict[str, int] | None = None,
) -> Reply:
    """A chat-completions answer as OpenAI's API writes it (20 and 10 tokens unless `usage` says)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    counts = usage or {"prompt_tokens": 20, "completion_tokens": 10}
    return Reply(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}
            ],
            "usage": {**counts, "total_tokens": sum(counts.values())},
        }
    )


def sse(data: Any, event: str | None = None) -> str:
    """One server-sent event: `data` as JSON (a string as it is), under an event name if given."""
    text = data if isinstance(data, str) else json.dumps(data)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


@dataclass(frozen=True)
class Received:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class LoopbackServer:
    """A ThreadingHTTPServer on 127.0.0.1 and a free port, answering from a queue."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.received: list[Received] = []
        self.gate_waits: list[bool] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def last(self) -> Received:
        assert self.received, "the server received no request"
        return self.received[-1]


def _as_asked(reply: Reply, body: Any) -> Reply:
    """A chat completion queued whole, sent as a stream of chunks when the request asked to stream.

    A model server streams whatever it answers when asked to: so do these
    replies, and a test written for a whole answer holds for a workflow whose
    model calls stream (the engine streams every call its provider can).
    """
    answer = reply.body
    asked = isinstance(body, dict) and body.get("stream") is True
    if not asked or reply.stream is not None or not isinstance(answer, dict):
        return reply
    if answer.get("object") != "chat.completion" or reply.status != 200:
        return reply
    head = {key: answer[key] for key in ("id", "created", "model") if key in answer}
    head["object"] = "chat.completion.chunk"
    events: list[str] = []
    for choice in answer.get("choices") or []:
        message = dict(choice.get("message") or {})
        calls = message.pop("tool_calls", None) or []
        delta = {**message, "tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]}
        if not calls:
            del delta["tool_calls"]
        finish = {"index": choice.get("index", 0), "delta": {}, "finish_reason": choice.get("finish_reason")}
        for part in ({"index": choice.get("index", 0), "delta": delta, "finish_reason": None}, finish):
            events.append(sse({**head, "choices": [part]}))
    if answer.get("usage") is not None:
        events.append(sse({**head, "choices": [], "usage": answer["usage"]}))
    return Reply(status=reply.status, headers=reply.headers, stream=(*events, sse("[DONE]")))


def _handler_for(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            server.received.append(
                Received(
                    method="POST",
                    path=self.path,
                    headers={name.lower(): value for name, value in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
            )
            reply = (
                server.replies.popleft()
                if server.replies
                else Reply({"error": {"message": "no scripted reply left"}}, status=500)
            )
            if reply.delay:
                time.sleep(reply.delay)
            reply = _as_asked(reply, server.received[-1].body)
            if reply.stream is not None:
                self._stream(reply)
                return
            payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            data = payload.encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the timeout test)

        def _stream(self, reply: Reply) -> None:
            assert reply.stream is not None
            # Chunked framing needs HTTP/1.1; a cut is then a body without its end, as the client sees it.
            self.protocol_version = "HTTP/1.1"
            self.close_connection = True
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.flush()
                for index, event in enumerate(reply.stream):
                    if index == reply.cut_after:
                        return
                    if reply.gate is not None and index == reply.gate_after:
                        server.gate_waits.append(reply.gate.wait(GATE_WAIT))
                    if reply.stream_delay:
                        time.sleep(reply.stream_delay)
                    data = event.encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                if reply.cut_after is None:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
