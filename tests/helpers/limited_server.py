"""A real OpenAI-compatible model server on loopback that enforces a rate limit, as providers do.

``POST /v1/chat/completions`` answers at most `LimitedServer.limit` requests
in any sliding window of `LimitedServer.window` seconds (60, as a provider's
minute, unless a test shortens it); over that it answers 429 with
``Retry-After`` (and ``retry-after-ms``) saying when a place frees. It
records when each request arrived, accepted or refused, so a test (or
``bench/limits_bench.py``) checks what the provider saw. A request with
``"stream": true`` is answered in server-sent events, as OpenAI's API does.
It runs in a thread of its own: workers in other processes reach it over a
real socket, at `LimitedServer.base_url`.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LimitedServer", "most_in_any_window"]


def most_in_any_window(times: list[float], window: float) -> int:
    """The most of `times` (seconds) that fall within any `window` seconds (a half-open interval)."""
    ordered = sorted(times)
    most = start = 0
    for end, at in enumerate(ordered):
        while ordered[start] <= at - window:
            start += 1
        most = max(most, end - start + 1)
    return most


class LimitedServer:
    """A ThreadingHTTPServer on 127.0.0.1 answering chat completions, `limit` per `window` seconds."""

    def __init__(self, limit: int, window: float = 60.0, *, delay: float = 0.0, answer: str = "ok") -> None:
        self.limit, self.window, self.delay, self.answer = limit, window, delay, answer
        self.accepted: list[float] = []  # time.time() of each request answered
        self.refused: list[float] = []  # and of each answered 429
        self.in_flight = self.most_in_flight = 0  # requests being answered now, and the most at once
        self._recent: deque[float] = deque()  # monotonic times of the accepted ones in the window
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def admit(self) -> float | None:
        """Count a request now: None if it is answered, else the seconds until a place frees."""
        with self._lock:
            now = time.monotonic()
            while self._recent and self._recent[0] <= now - self.window:
                self._recent.popleft()
            if len(self._recent) >= self.limit:
                self.refused.append(time.time())
                return max(0.001, self._recent[0] + self.window - now)
            self._recent.append(now)
            self.accepted.append(time.time())
            return None

    def most_in_a_window(self) -> int:
        """The most requests answered within any one window."""
        with self._lock:
            return most_in_any_window(list(self.accepted), self.window)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LimitedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-limited",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _chunks(model: str, content: str) -> list[dict[str, Any]]:
    """The answer as OpenAI streams it: a chunk a word, then the finish and the usage."""
    base = {"id": "chatcmpl-limited", "object": "chat.completion.chunk", "created": int(time.time())}
    words = content.split(" ")
    chunks = [
        {**base, "model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    for n, word in enumerate(words):
        text = word if n == 0 else " " + word
        chunks.append({**base, "model": model, "choices": [{"index": 0, "delta": {"content": text}}]})
    chunks.append({**base, "model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append(
        {
            **base,
            "model": model,
            "choices": [],
            "usage": {"prompt_tokens": 11, "completion_tokens": len(words), "total_tokens": 11 + len(words)},
        }
    )
    return chunks


def _handler_for(server: LimitedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            wait = server.admit()
            if wait is not None:
                message = {"message": "Rate limit reached for requests", "code": "rate_limit_exceeded"}
                headers = {"Retry-After": str(math.ceil(wait)), "retry-after-ms": str(math.ceil(wait * 1000))}
                self._send(429, {"error": {**message, "type": "requests"}}, headers)
                return
            with server._lock:
                server.in_flight += 1
                server.most_in_flight = max(server.most_in_flight, server.in_flight)
            try:
                if server.delay:
                    time.sleep(server.delay)
            finally:
                with server._lock:
                    server.in_flight -= 1
            model = str(body.get("model", "limited"))
            if body.get("stream"):
                self._stream(_chunks(model, server.answer))
                return
            self._send(200, _completion(model, server.answer))

        def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _stream(self, chunks: list[dict[str, Any]]) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
