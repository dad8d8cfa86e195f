"""One process's turn at the graph of langgraph_tools_graph.py, as a program that a crash stops would
take it up again: start the thread, or go on from its last checkpoint, or answer its approval.

Run: ``python -m tests.integrations.langgraph_crash_child SAVER URL THREAD`` with SAVER ``ratchet``
(RatchetSaver on a store URL) or ``sqlite`` (LangGraph's SqliteSaver on sqlite:///PATH). Each turn is
one ``invoke`` with ``durability="sync"`` (a step's checkpoint is written before the next step
starts), then one JSON line: what the thread waits for next, its final state (`outcome`) and its
history (each checkpoint's step, source and next nodes, newest first).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import Command

from .langgraph_tools_graph import START_INPUT, build, outcome


@contextlib.contextmanager
def saver(kind: str, url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    if kind == "ratchet":
        from ratchet.integrations.langgraph import RatchetSaver

        with RatchetSaver.from_conn_string(url) as ours:
            yield ours
        return
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(url.removeprefix("sqlite:///")) as theirs:
        yield theirs


def main() -> None:
    kind, url, thread_id = sys.argv[1:4]
    config: Any = {"configurable": {"thread_id": thread_id}}
    with saver(kind, url) as checkpointer:
        graph = build(checkpointer)
        state = graph.get_state(config)
        if not state.values:
            what: Any = START_INPUT
        elif any(task.interrupts for task in state.tasks):
            what = Command(resume="yes")
        else:
            what = None  # go on from the last checkpoint (a step that had not finished runs again)
        graph.invoke(what, config, durability="sync")
        state = graph.get_state(config)
        history = [
            [snapshot.metadata.get("step"), snapshot.metadata.get("source"), list(snapshot.next)]
            for snapshot in graph.get_state_history(config)
            if snapshot.metadata is not None
        ]
    print(json.dumps({"next": list(state.next), "outcome": outcome(state.values), "history": history}))


if __name__ == "__main__":
    main()
