"""A LangGraph graph that asks a person with interrupt(), run on RatchetSaver (test_langgraph_threads.py).

``python -m tests.integrations.langgraph_approval_graph URL THREAD [--no-graph | --graph REF]`` runs
the thread until it interrupts or ends and prints its state as JSON; with ``--no-graph`` the saver
names no graph. A worker finds the graph as ``tests.integrations.langgraph_approval_graph:builder``,
or as ``--graph`` says (the file copied elsewhere). ``--fragile`` runs ``fragile`` instead, whose
process kills itself in a node the first time (the mark file ``$LANGGRAPH_TEST_MARK`` says it did).
"""

from __future__ import annotations

import json
import operator
import os
import signal
import sys
from pathlib import Path
from typing import Annotated, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from ratchet.integrations.langgraph import RatchetSaver

GRAPH = "tests.integrations.langgraph_approval_graph:builder"
MARK_ENV = "LANGGRAPH_TEST_MARK"


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def plan(state: State) -> State:
    return {"log": ["planned"]}


def ask(state: State) -> State:
    answer = interrupt({"question": "ship it?", "plan": state["log"]})
    return {"log": [f"answer: {answer}"]}


def ship(state: State) -> State:
    return {"log": ["shipped" if state["log"][-1] == "answer: yes" else "held"]}


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("ask", ask)
builder.add_node("ship", ship)
builder.add_edge(START, "plan")
builder.add_edge("plan", "ask")
builder.add_edge("ask", "ship")
builder.add_edge("ship", END)

# A subgraph that asks, inside a parent that goes on after it.
inner = StateGraph(State)
inner.add_node("ask", ask)
inner.add_edge(START, "ask")
inner.add_edge("ask", END)
nested = StateGraph(State)
nested.add_node("inner", inner.compile())
nested.add_node("ship", ship)
nested.add_edge(START, "inner")
nested.add_edge("inner", "ship")
nested.add_edge("ship", END)


def ask_legal(state: State) -> State:
    return {"log": [f"legal: {interrupt('may we ship?')}"]}


def ask_ops(state: State) -> State:
    return {"log": [f"ops: {interrupt('is the fleet ready?')}"]}


# Two nodes that ask at once.
both = StateGraph(State)
both.add_node("legal", ask_legal)
both.add_node("ops", ask_ops)
both.add_edge(START, "legal")
both.add_edge(START, "ops")
both.add_edge("legal", END)
both.add_edge("ops", END)

# Stopped before ship by a static breakpoint, in its program and when a worker runs it.
stepwise = StateGraph(State)
stepwise.add_node("plan", plan)
stepwise.add_node("ship", ship)
stepwise.add_edge(START, "plan")
stepwise.add_edge("plan", "ship")
stepwise.add_edge("ship", END)
paused = stepwise.compile(interrupt_before=["ship"])


def boom(state: State) -> State:
    """Kill this process the first time (SIGKILL: nothing runs after it), then go on."""
    mark = Path(os.environ[MARK_ENV])
    if not mark.exists():
        mark.write_text("killed once", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"log": ["survived"]}


# Its process dies in a node the first time; a worker takes the thread up once the lease expires.
fragile = StateGraph(State)
fragile.add_node("plan", plan)
fragile.add_node("boom", boom)
fragile.add_edge(START, "plan")
fragile.add_edge("plan", "boom")
fragile.add_edge("boom", END)


def main() -> None:
    url, thread_id = sys.argv[1], sys.argv[2]
    graph_ref = None if "--no-graph" in sys.argv else GRAPH
    if "--graph" in sys.argv:
        graph_ref = sys.argv[sys.argv.index("--graph") + 1]
    chosen, ttl = builder, 60.0
    if "--fragile" in sys.argv:
        chosen, ttl, graph_ref = fragile, 1.0, GRAPH.replace(":builder", ":fragile")
    with RatchetSaver.from_conn_string(url, graph=graph_ref, fence_ttl=ttl) as saver:
        graph = chosen.compile(checkpointer=saver)
        # "sync": each checkpoint is stored before the next step (a kill loses no step)
        graph.invoke({"log": []}, {"configurable": {"thread_id": thread_id}}, durability="sync")
        state = graph.get_state({"configurable": {"thread_id": thread_id}})
        print(json.dumps({"log": state.values["log"], "next": list(state.next)}))


if __name__ == "__main__":
    main()
