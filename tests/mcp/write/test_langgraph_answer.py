"""MCP's answer tool answers a LangGraph thread's interrupt, and a worker resumes the graph with it."""

from __future__ import annotations

from typing import Any

from ratchet import Runtime, Worker
from ratchet.integrations.langgraph import RatchetSaver
from ratchet.records import TaskStatus, WaitReason
from ratchet.store import StateStore

from ...integrations.langgraph_approval_graph import GRAPH, builder
from .write_support import call, ok, refused
from .write_support import rt as rt

CONFIG: Any = {"configurable": {"thread_id": "order-9"}}


async def test_the_answer_tool_answers_an_interrupt_and_a_worker_resumes_the_graph(
    rt: Runtime, store: StateStore
) -> None:
    await builder.compile(checkpointer=RatchetSaver(store, graph=GRAPH)).ainvoke({"log": []}, CONFIG)
    task = await store.get_task("langgraph:order-9")
    assert task.waiting_on is WaitReason.INPUT

    assert "may not answer it" in refused(
        await call(rt, "alice", "answer", task_id="langgraph:order-9", text="yes")
    )
    ok(await call(rt, "langgraph", "answer", task_id="langgraph:order-9", text="yes"))
    await Worker(store, poll_interval=0.01).run(until_idle=True)

    assert (await store.get_task("langgraph:order-9")).status is TaskStatus.COMPLETED
    graph = builder.compile(checkpointer=RatchetSaver(store))
    assert (await graph.aget_state(CONFIG)).values["log"] == ["planned", "answer: yes", "shipped"]
