"""A LangGraph thread with interrupt() on RatchetSaver is a Ratchet task, answered with `ratchet answer`.

Every step is a real process on a real store (a SQLite file, or the test PostgreSQL): the graph's
program runs the thread until it interrupts; `ratchet tasks` lists it waiting for input; `ratchet
answer` answers; a `ratchet worker` (or `ratchet resume`) takes the thread up with
``Command(resume=answer)``, and the graph ends with the answer in its state.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ratchet.integrations.langgraph import RatchetSaver

from ..helpers.cli import assert_one_line_error, ratchet_command, ratchet_env
from .langgraph_approval_graph import GRAPH, MARK_ENV, builder, fragile

REPO = Path(__file__).resolve().parents[2]


def run(command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, cwd=REPO, env=ratchet_env(**env), timeout=120
    )


def ratchet(*args: str) -> subprocess.CompletedProcess[str]:
    return run(ratchet_command(*args))


def run_graph(url: str, thread_id: str, *extra: str) -> dict[str, Any]:
    """The graph's own program, run until the thread interrupts or ends: its state as it printed it."""
    done = run([sys.executable, "-m", "tests.integrations.langgraph_approval_graph", url, thread_id, *extra])
    assert done.returncode == 0, done.stderr
    state: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return state


def listed(url: str) -> dict[str, dict[str, Any]]:
    done = ratchet("tasks", "--store", url, "--json")
    assert done.returncode == 0, done.stderr
    return {task["task_id"]: task for task in json.loads(done.stdout)}


def final_log(url: str, thread_id: str) -> tuple[list[str], tuple[str, ...]]:
    with RatchetSaver.from_conn_string(url) as saver:
        state = builder.compile(checkpointer=saver).get_state({"configurable": {"thread_id": thread_id}})
    return list(state.values["log"]), tuple(state.next)


def test_an_interrupted_thread_waits_in_ratchet_tasks_and_ratchet_answer_resumes_it_in_a_worker(
    url: str,
) -> None:
    assert run_graph(url, "order-7") == {"log": ["planned"], "next": ["ask"]}

    task = listed(url)["langgraph:order-7"]
    assert (task["status"], task["waiting_on"]) == ("waiting", "input")
    assert task["agent"] == "langgraph"
    shown = ratchet("show", "langgraph:order-7", "--store", url, "--json")
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["question"] == "ship it?"
    assert [step["name"] for step in document["steps"]][-1] == "step 1 (loop): ask"
    [pending] = document["langgraph"]["pending_writes"]
    assert (pending["node"], pending["channel"]) == ("ask", "__interrupt__")
    assert document["langgraph"]["interrupts"][0]["value"] == {"question": "ship it?", "plan": ["planned"]}
    text = ratchet("show", "langgraph:order-7", "--store", url).stdout
    assert f"LangGraph thread 'order-7', graph {GRAPH}" in text
    assert "pending writes on its latest checkpoint: __interrupt__ by ask" in text

    answered = ratchet("answer", "langgraph:order-7", "yes", "--store", url)
    assert answered.returncode == 0, answered.stderr
    worked = ratchet("worker", "--store", url, "--until-idle")
    assert worked.returncode == 0, worked.stderr

    task = listed(url)["langgraph:order-7"]
    assert task["status"] == "completed", task
    assert final_log(url, "order-7") == (["planned", "answer: yes", "shipped"], ())


def test_ratchet_resume_takes_an_answered_thread_up_too(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    run_graph(url, "t1")
    assert ratchet("answer", "langgraph:t1", "no", "--store", url).returncode == 0
    resumed = ratchet("resume", "langgraph:t1", "--store", url)
    assert resumed.returncode == 0, resumed.stderr
    assert listed(url)["langgraph:t1"]["status"] == "completed"
    assert final_log(url, "t1") == (["planned", "answer: no", "held"], ())


def test_answering_a_thread_whose_saver_named_no_graph_is_refused_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ratchet.db'}"
    run_graph(url, "t1", "--no-graph")
    assert listed(url)["langgraph:t1"]["waiting_on"] == "input"

    line = assert_one_line_error(ratchet("answer", "langgraph:t1", "yes", "--store", url))
    assert "named no graph" in line and "graph='module:attribute'" in line and "nothing was answered" in line
    task = listed(url)["langgraph:t1"]
    assert (task["status"], task["waiting_on"]) == ("waiting", "input")
    assert final_log(url, "t1") == (["planned"], ("ask",))


def test_a_thread_whose_program_was_killed_is_taken_up_by_a_worker_once_its_lease_expires(
    url: str, tmp_path: Path
) -> None:
    mark = tmp_path / "killed"
    command = [sys.executable, "-m", "tests.integrations.langgraph_approval_graph", url, "t1", "--fragile"]
    killed = run(command, **{MARK_ENV: str(mark)})
    assert killed.returncode == -signal.SIGKILL and mark.exists()
    assert listed(url)["langgraph:t1"]["status"] == "running"

    time.sleep(1.5)  # the program's lease on the task (fence_ttl=1) expires: nothing renews it now
    worked = run(ratchet_command("worker", "--store", url, "--until-idle"), **{MARK_ENV: str(mark)})
    assert worked.returncode == 0, worked.stderr
    assert listed(url)["langgraph:t1"]["status"] == "completed"
    with RatchetSaver.from_conn_string(url) as saver:
        state = fragile.compile(checkpointer=saver).get_state({"configurable": {"thread_id": "t1"}})
    assert state.values["log"] == ["planned", "survived"]
