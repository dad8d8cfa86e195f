"""`SyncRuntime`: Runtime's verbs as plain calls, from a script, a WSGI server's threads, a notebook.

Each place is the real one: the script runs as ``python script.py`` with a
``ratchet worker`` process beside it, the threads are those of a real
threading WSGI server answering real HTTP requests, and the notebook runs
in a real Jupyter kernel (where an event loop already runs in the thread
that calls).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import nbformat
import pytest
from nbclient import NotebookClient

from ratchet import SyncRuntime
from ratchet.errors import StoreURLError, TaskNotFound
from ratchet.records import TaskStatus
from ratchet.store import open_store

from ..helpers.cli import as_from_a_terminal, ratchet_env
from .flows import FLOWS

HERE = Path(__file__).resolve().parent


def test_a_plain_script_uses_every_verb(url: str, tmp_path: Path) -> None:
    shutil.copy(HERE / "sync_script.py", tmp_path / "sync_script.py")
    done = subprocess.run(
        [sys.executable, "sync_script.py", url],
        cwd=tmp_path,
        env=ratchet_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said == {
        "run": ["completed", 42],
        "approval": "waiting(approval)",
        "approved": {"sent_to": "ops@example.com"},
        "question": "waiting(input)",
        "answered": "eu-west-1",
        "worker": 0,
        "waited": 8,
        "timer": "waiting(timer)",
        "cancelled": ["cancelled", "not needed"],
        "got": 42,
        "completed": ["double", "mail", "asks", "for the worker"],
        "newest": True,
        "refused": "inputs of double: n: Input should be a valid integer, "
        "unable to parse string as an integer",
        "tasks": 5,
    }


class _ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _wsgi_app(rt: SyncRuntime, together: threading.Barrier) -> Callable[..., Iterable[bytes]]:
    """A web app whose every request runs `double` through the one SyncRuntime all its threads share."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        n = int(parse_qs(environ["QUERY_STRING"])["n"][0])
        together.wait()  # every request is in a thread of its own before any runs its task
        task = rt.run(f"{FLOWS}:double", {"n": n})
        body = {"id": task.id, "result": rt.get_task(task.id).result, "thread": threading.get_ident()}
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    return app


@pytest.fixture
def sync_rt(store_url: str) -> Iterator[SyncRuntime]:
    with SyncRuntime(store_url) as rt:
        yield rt


def test_the_threads_of_a_wsgi_server_share_one_sync_runtime(sync_rt: SyncRuntime) -> None:
    count = 8
    server = make_server(
        "127.0.0.1",
        0,
        _wsgi_app(sync_rt, threading.Barrier(count, timeout=60)),
        server_class=_ThreadingWSGIServer,
        handler_class=_Quiet,
    )
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:

        def ask(n: int) -> dict[str, Any]:
            address = f"http://127.0.0.1:{server.server_port}/?n={n}"
            with urllib.request.urlopen(address, timeout=120) as answer:
                found: dict[str, Any] = json.loads(answer.read())
                return found

        with ThreadPoolExecutor(count) as clients:
            answers = list(clients.map(ask, range(count)))
    finally:
        server.shutdown()
        server.server_close()
    assert [answer["result"] for answer in answers] == [2 * n for n in range(count)]
    assert len({answer["thread"] for answer in answers}) == count
    listed = sync_rt.list_tasks(status=TaskStatus.COMPLETED)
    assert sorted(task.id for task in listed) == sorted(answer["id"] for answer in answers)


async def test_it_works_where_an_event_loop_runs_already(sync_rt: SyncRuntime) -> None:
    asyncio.get_running_loop()  # as in a notebook: asyncio.run would be refused here
    task = sync_rt.run(f"{FLOWS}:double", {"n": 5})
    assert (task.status, task.result) == (TaskStatus.COMPLETED, 10)
    assert sync_rt.result(task.id) == 10


def test_a_jupyter_notebook_runs_tasks_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter"))
    shutil.copy(HERE / "flows.py", tmp_path / "flows.py")  # the notebook's workflows, beside it
    url = f"sqlite:///{tmp_path / 'notebook.db'}"
    cells = [
        "import asyncio\nasyncio.get_running_loop()  # the kernel's own loop runs in this thread",
        f"import flows, ratchet\nrt = ratchet.SyncRuntime({url!r})\ntask = rt.run(flows.checkout, "
        '{"order": {"sku": "tea", "quantity": 2}, "when": "2026-03-01T09:30:00Z"})',
        "receipt = rt.result(task.id)\nprint(task.status.value, type(receipt).__name__, receipt.total_cents)",
        "rt.close()",
    ]
    # nbformat's builders are not annotated.
    code = [nbformat.v4.new_code_cell(source) for source in cells]  # type: ignore[no-untyped-call]
    notebook = nbformat.v4.new_notebook(cells=code)  # type: ignore[no-untyped-call]
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    [printed] = notebook.cells[2].outputs
    assert printed["text"] == "completed Receipt 500\n"

    async def stored() -> list[str]:
        store = await open_store(url)
        try:
            return [str(task.workflow) for task in await store.list_tasks()]
        finally:
            await store.close()

    assert asyncio.run(stored()) == ["flows:checkout"]


def test_close_ends_it_and_a_closed_runtime_says_so(store_url: str) -> None:
    threads = threading.active_count()
    rt = SyncRuntime(store_url)
    with pytest.raises(TaskNotFound):
        rt.get_task("nope")
    rt.close()
    rt.close()  # again: nothing to do
    assert rt.closed
    with pytest.raises(RuntimeError, match="this SyncRuntime is closed"):
        rt.list_tasks()
    assert threading.active_count() == threads


def test_a_store_url_that_names_no_store_is_refused_at_once() -> None:
    threads = threading.active_count()
    with pytest.raises(StoreURLError):
        SyncRuntime("mysql://localhost/ratchet")
    assert threading.active_count() == threads


def test_ctrl_c_stops_a_run_which_then_resumes_at_once(tmp_path: Path) -> None:
    shutil.copy(HERE / "interrupt_script.py", tmp_path / "interrupt_script.py")
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    script = subprocess.Popen(
        [sys.executable, "interrupt_script.py", url, str(tmp_path / "flag")],
        cwd=tmp_path,
        env=ratchet_env(),
        preexec_fn=as_from_a_terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert script.stdout is not None
        task_id = script.stdout.readline().strip()
        with SyncRuntime(url) as rt:
            while rt.get_task(task_id).status is not TaskStatus.RUNNING:
                time.sleep(0.05)
        script.send_signal(signal.SIGINT)
        out, err = script.communicate(timeout=120)
    finally:
        script.kill()
    assert script.returncode == 0, err
    assert out.splitlines() == ["interrupted running", "flag seen"]
