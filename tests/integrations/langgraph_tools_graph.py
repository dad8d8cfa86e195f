"""A LangGraph agent graph with tools, a person's approval (`interrupt`) and a subgraph, for the tests
of RatchetSaver beside LangGraph's own savers (import, crash and resume).

The agent is scripted by the state: it calls the `record` tool (which
appends a line to the ledger file `LEDGER_ENV` names: a side effect to
count) for entries e0, e1, e2; after the first it asks a person to approve
(`interrupt`); then a subgraph summarizes. `crash_point` kills the process
with SIGKILL at a named point, once (a marker file remembers it fired).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt

LEDGER_ENV = "RATCHET_LG_LEDGER"
CRASH_ENV = "RATCHET_LG_CRASH"  # "agent:N" (the agent's Nth call) or "tool:ENTRY" (after its line)
MARK_ENV = "RATCHET_LG_CRASH_MARK"
ENTRIES = 3
START_INPUT: dict[str, Any] = {"messages": [HumanMessage(content="record the three entries")]}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    approval: NotRequired[str]


def crash_point(name: str) -> None:
    """SIGKILL this process if `name` is the crash point the environment names, the first time."""
    if os.environ.get(CRASH_ENV) != name:
        return
    mark = Path(os.environ[MARK_ENV])
    if mark.exists():
        return
    mark.write_text(name, encoding="utf-8")
    os.kill(os.getpid(), signal.SIGKILL)


@tool
def record(entry: str) -> str:
    """Append an entry to the ledger."""
    with open(os.environ[LEDGER_ENV], "a", encoding="utf-8") as ledger:
        ledger.write(entry + "\n")
    crash_point(f"tool:{entry}")
    return f"recorded {entry}"


def agent(state: State) -> dict[str, Any]:
    calls = sum(isinstance(m, AIMessage) for m in state["messages"]) + 1
    crash_point(f"agent:{calls}")
    done = sum(isinstance(m, ToolMessage) for m in state["messages"])
    if done == 1 and "approval" not in state:
        return {"messages": [AIMessage(content="asking a person")]}
    if done < ENTRIES:
        call = {"name": "record", "args": {"entry": f"e{done}"}, "id": f"call-{done}"}
        return {"messages": [AIMessage(content=f"recording e{done}", tool_calls=[call])]}
    return {"messages": [AIMessage(content=f"recorded {done} entries, approved: {state.get('approval')}")]}


def route(state: State) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return "tools"
    return "approve" if "approval" not in state else "summarize"


def approve(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "go on recording?", "recorded": 1})
    return {"approval": str(answer), "messages": [HumanMessage(content=f"approved: {answer}")]}


def summarize_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node(
        "count", lambda state: {"messages": [AIMessage(content=f"{len(state['messages'])} messages")]}
    )
    builder.add_edge(START, "count")
    builder.add_edge("count", END)
    return builder.compile()


def build(saver: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([record]))
    builder.add_node("approve", approve)
    builder.add_node("summarize", summarize_graph())
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", "approve", "summarize"])
    builder.add_edge("tools", "agent")
    builder.add_edge("approve", "agent")
    builder.add_edge("summarize", END)
    return builder.compile(checkpointer=saver)


def outcome(values: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The final state as runs that differ only in ids can be compared: each message's type,
    content, and its tool call's id (or a tool message's)."""
    found = []
    for message in values["messages"]:
        calls = ",".join(call["id"] or "" for call in getattr(message, "tool_calls", []) or [])
        found.append((message.type, str(message.content), calls or getattr(message, "tool_call_id", "")))
    return found
