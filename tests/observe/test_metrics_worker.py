"""`ratchet worker --metrics-port`, a real process scraped over HTTP while it runs a task."""

from __future__ import annotations

import signal
import socket
import time
from pathlib import Path

import httpx

from ..cli.task_support import FLOWS, start_ratchet, stop_with, submit, wait_for_file
from ..helpers.cli import assert_one_line_error, ratchet_runner
from .metrics_support import Samples, free_port, scrape, value


def wait_for(port: int, done: str, timeout: float = 20.0) -> Samples:
    deadline = time.monotonic() + timeout
    while (samples := scrape(port))[("ratchet_tasks", frozenset({("status", done)}))] < 1:
        assert time.monotonic() < deadline, f"no task became {done} in {timeout} s"
        time.sleep(0.05)
    return samples


def test_metrics_follow_a_task_as_the_worker_runs_it(tmp_path: Path, url: str) -> None:
    port = free_port()
    worker = start_ratchet(
        tmp_path,
        "worker",
        "--store",
        url,
        "--poll",
        "0.05",
        "--workflows",
        str(FLOWS),
        "--metrics-port",
        str(port),
        "--concurrency",
        "3",
    )
    try:
        idle = scrape(port)
        assert value(idle, "ratchet_worker_slots_free") == 3
        assert value(idle, "ratchet_worker_slots_in_use") == 0
        assert value(idle, "ratchet_tasks", status="running") == 0
        assert value(idle, "ratchet_calls_total", kind="tool", outcome="succeeded") == 0
        assert value(idle, "ratchet_queue_depth") == 0

        marker = tmp_path / "lingering"
        submit(url, "lingers_then_shouts", marker=str(marker), seconds=1.0)
        wait_for_file(marker, worker)
        running = scrape(port)
        assert value(running, "ratchet_tasks", status="running") == 1
        assert value(running, "ratchet_tasks", status="completed") == 0
        assert (
            value(running, "ratchet_worker_slots_in_use"),
            value(running, "ratchet_worker_slots_free"),
        ) == (1, 2)

        done = wait_for(port, "completed")
        assert value(done, "ratchet_tasks", status="running") == 0
        assert value(done, "ratchet_calls_total", kind="tool", outcome="succeeded") == 2
        assert value(done, "ratchet_journal_commit_seconds_count") >= 2
        assert value(done, "ratchet_journal_commit_seconds_sum") > 0
        assert value(done, "ratchet_lease_takeovers_total") == 0
        assert (
            value(done, "ratchet_tool_call_duration_seconds_count", tool="linger", outcome="succeeded") == 1
        )
        assert (
            value(done, "ratchet_tool_call_duration_seconds_sum", tool="linger", outcome="succeeded") >= 1.0
        )
        assert (
            value(
                done, "ratchet_task_duration_seconds_count", agent="lingers_then_shouts", outcome="completed"
            )
            == 1
        )
        assert httpx.get(f"http://127.0.0.1:{port}/elsewhere", timeout=5).status_code == 404
        # A page that rebound its own name to 127.0.0.1 reads nothing (DNS rebinding).
        metrics = f"http://127.0.0.1:{port}/metrics"
        rebound = httpx.get(metrics, headers={"host": f"attacker.example:{port}"}, timeout=5)
        assert rebound.status_code == 421 and b"ratchet_tasks" not in rebound.content, rebound.text
        assert httpx.get(metrics, headers={"host": f"localhost:{port}"}, timeout=5).status_code == 200
        head = httpx.head(metrics, timeout=5)
        assert head.status_code == 200 and head.content == b""
        posted = httpx.post(metrics, timeout=5)
        assert posted.status_code == 405 and posted.text == "use GET\n"
    finally:
        _out, err = stop_with(worker, signal.SIGTERM)
    assert worker.returncode == 0, err


def test_a_port_in_use_is_one_line_error(tmp_path: Path) -> None:
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = ratchet_runner(tmp_path)(
            "worker", "--store", f"sqlite:///{tmp_path / 'r.db'}", "--metrics-port", str(port)
        )
    assert_one_line_error(done, f"--metrics-port {port} on 127.0.0.1: cannot listen there")


def test_an_address_it_cannot_listen_on_is_one_line_error(tmp_path: Path) -> None:
    port = free_port()
    done = ratchet_runner(tmp_path)(
        "worker",
        "--store",
        f"sqlite:///{tmp_path / 'r.db'}",
        "--metrics-port",
        str(port),
        "--metrics-host",
        "no-such-host.invalid",
    )
    assert_one_line_error(done, f"--metrics-port {port} on no-such-host.invalid: cannot listen there")
