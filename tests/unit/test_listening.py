"""The socket a server binds listens at once: the URL it prints answers before its start-up ends.

`serve_asgi` prints the server's URL and then hands the socket to uvicorn, whose
start-up (the app's lifespan) takes its time; a client that read the URL and
connected in between was refused (a `ratchet serve` test did, on a loaded CI
machine). A listening socket queues that client until the server accepts it.
"""

from __future__ import annotations

import socket

import pytest

from ratchet.errors import InputError
from ratchet.trust.listening import listen_socket, listening_url


def test_a_bound_socket_takes_connections_before_any_server_accepts_them() -> None:
    listening = listen_socket("127.0.0.1", 0)
    try:
        url = listening_url("127.0.0.1", listening)
        port = int(url.rsplit(":", 1)[1])

        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            accepted, _ = listening.accept()
            with accepted:
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
    finally:
        listening.close()


def test_a_port_in_use_is_one_line_naming_it() -> None:
    taken = listen_socket("127.0.0.1", 0)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(InputError, match=rf"^cannot listen on 127\.0\.0\.1:{port} \(.+\); choose"):
            listen_socket("127.0.0.1", port)
    finally:
        taken.close()
