"""A real LangGraph graph on RatchetSaver: sync and async, stopped by an interrupt (human in the loop)
and resumed by another saver on the same store, its message history stored as what each step adds."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph

from ratchet.integrations.langgraph import RatchetSaver
from ratchet.store import StateStore

STEPS = 25


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    steps: int


def think(state: State) -> dict[str, Any]:
    step = state["steps"] + 1
    return {
        "messages": [AIMessage(content=f"thought {step}: " + "weighing the options. " * 12)],
        "steps": step,
    }


def review(state: State) -> dict[str, Any]:
    return {"messages": [AIMessage(content=f"reviewed {len(state['messages'])} messages")]}


def graph(saver: RatchetSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    builder = StateGraph(State)
    builder.add_node("think", think)
    builder.add_node("review", review)
    builder.add_edge(START, "think")
    builder.add_conditional_edges("think", lambda state: "think" if state["steps"] < STEPS else "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=saver, interrupt_before=["review"])


CONFIG: Any = {"configurable": {"thread_id": "t1"}, "recursion_limit": STEPS + 10}
START_INPUT = {"messages": [HumanMessage(content="plan the migration")], "steps": 0}


def check_interrupted(values: dict[str, Any], next_nodes: tuple[str, ...]) -> None:
    assert next_nodes == ("review",)
    assert values["steps"] == STEPS
    assert [m.content for m in values["messages"][:2]] == [
        "plan the migration",
        think({"steps": 0, "messages": []})["messages"][0].content,
    ]
    assert len(values["messages"]) == STEPS + 1


def check_finished(values: dict[str, Any], next_nodes: tuple[str, ...], ids: list[str]) -> None:
    assert next_nodes == ()
    assert len(values["messages"]) == STEPS + 2
    assert values["messages"][-1].content == f"reviewed {STEPS + 1} messages"
    assert [m.id for m in values["messages"][:-1]] == ids  # the history as it was before the interrupt


async def chain_length(store: StateStore) -> int:
    [row] = await store.list_langgraph_checkpoints("t1", "", limit=1)
    return len(await store.get_langgraph_values("t1", [row.value_hashes()["messages"]]))


async def test_an_async_graph_stops_at_an_interrupt_and_another_saver_resumes_it(store: StateStore) -> None:
    first = graph(RatchetSaver(store))
    await first.ainvoke(START_INPUT, CONFIG)
    state = await first.aget_state(CONFIG)
    check_interrupted(state.values, state.next)
    ids = [m.id for m in state.values["messages"]]
    # Each step's history is stored as the message it adds: the latest is a chain back to the first.
    assert await chain_length(store) > STEPS

    second = graph(RatchetSaver(store))  # as after a restart
    await second.ainvoke(None, CONFIG)
    state = await second.aget_state(CONFIG)
    check_finished(state.values, state.next, ids)
    history = [snapshot async for snapshot in second.aget_state_history(CONFIG)]
    assert len(history) == STEPS + 3  # the input, each step, the review


def test_a_sync_graph_stops_at_an_interrupt_and_another_saver_resumes_it(url: str) -> None:
    with RatchetSaver.from_conn_string(url) as saver:
        first = graph(saver)
        first.invoke(START_INPUT, CONFIG)
        state = first.get_state(CONFIG)
        check_interrupted(state.values, state.next)
        ids = [m.id for m in state.values["messages"]]

    with RatchetSaver.from_conn_string(url) as saver:
        second = graph(saver)
        second.invoke(None, CONFIG)
        state = second.get_state(CONFIG)
        check_finished(state.values, state.next, ids)
        assert len(list(second.get_state_history(CONFIG))) == STEPS + 3


def test_a_saver_opened_with_with_serves_an_async_graph_too(url: str) -> None:
    with RatchetSaver.from_conn_string(url) as saver:
        compiled = graph(saver)
        asyncio.run(compiled.ainvoke(START_INPUT, CONFIG))
        state = compiled.get_state(CONFIG)
        check_interrupted(state.values, state.next)


async def test_a_sync_call_in_the_stores_own_loop_is_refused_in_one_line(store_url: str) -> None:
    async with RatchetSaver.from_conn_string(store_url) as saver:
        with pytest.raises(asyncio.InvalidStateError) as refused:
            saver.get_tuple(CONFIG)
    assert "\n" not in str(refused.value)
    assert "use the async ones" in str(refused.value)


def test_every_sync_method_does_what_its_async_twin_does(url: str) -> None:
    config: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
    with RatchetSaver.from_conn_string(url) as saver:
        configs = []
        for step in range(1, 4):
            checkpoint = empty_checkpoint()
            checkpoint["channel_values"] = {"notes": [f"note {n}" for n in range(step)]}
            checkpoint["channel_versions"] = {"notes": step}
            config = saver.put(config, checkpoint, {"step": step, "run_id": f"run-{step}"}, {"notes": step})
            configs.append(config)
        saver.put_writes(configs[-1], [("notes", ["note 3"])], "task-1")

        latest = saver.get_tuple({"configurable": {"thread_id": "t1"}})
        assert latest is not None
        assert latest.checkpoint["channel_values"]["notes"] == ["note 0", "note 1", "note 2"]
        assert latest.pending_writes == [("task-1", "notes", ["note 3"])]
        assert [found.config for found in saver.list({"configurable": {"thread_id": "t1"}})] == configs[::-1]

        saver.copy_thread("t1", "t2")
        assert len(list(saver.list({"configurable": {"thread_id": "t2"}}))) == 3
        saver.delete_for_runs(["run-1"])
        assert len(list(saver.list({"configurable": {"thread_id": "t1"}}))) == 2
        saver.prune(["t1"], strategy="keep_latest")
        assert [found.config for found in saver.list({"configurable": {"thread_id": "t1"}})] == [configs[-1]]
        saver.delete_thread("t2")
        assert list(saver.list({"configurable": {"thread_id": "t2"}})) == []
