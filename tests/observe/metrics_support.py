"""Reading Prometheus metrics in tests: scrape a URL, or parse an exposition, into {(name, labels): value}."""

from __future__ import annotations

import socket
import time

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int, *, wait: float = 15.0) -> Samples:
    """GET /metrics on the port, waiting up to `wait` seconds for the server to be up."""
    deadline = time.monotonic() + wait
    while True:
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
            answer.raise_for_status()
            assert answer.headers["content-type"].startswith("text/plain")
            return parse(answer.text)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
