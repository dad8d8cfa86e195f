"""How a RatchetSaver thread's task follows the thread, on every store: made on its first checkpoint,
running while its program runs it (holding the task's lease), waiting for input at an interrupt,
running again when the program resumes it itself, completed when nothing is next, failed on a node's
error; its checkpoints are its steps. ``tasks=False`` makes none."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from ratchet import Runtime
from ratchet.errors import InputError, TaskNotFound
from ratchet.integrations.langgraph import RatchetSaver
from ratchet.records import OpKind, OpStatus, StepStatus, TaskStatus, WaitReason
from ratchet.records.langgraph_thread import THREAD_WORKFLOW
from ratchet.store import StateStore
from ratchet.views.task import load_task_view

from . import langgraph_approval_graph as approval_graph

CONFIG: Any = {"configurable": {"thread_id": "t1"}}


class State(TypedDict):
    log: Annotated[list[str], operator.add]


def build(saver: BaseCheckpointSaver[Any], middle: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("first", lambda state: {"log": ["first"]})
    builder.add_node("middle", middle)
    builder.add_edge(START, "first")
    builder.add_edge("first", "middle")
    builder.add_edge("middle", END)
    return builder.compile(checkpointer=saver)


async def test_a_thread_run_to_its_end_is_a_completed_task_whose_steps_are_its_checkpoints(
    store: StateStore,
) -> None:
    leases: list[Any] = []

    async def middle(state: State) -> State:
        leases.append(await store.get_lease("langgraph:t1"))  # while the program runs the thread
        return {"log": ["middle"]}

    # "sync": each checkpoint (and the task's move) is stored before the next step runs.
    graph = build(RatchetSaver(store, graph="app:graph"), middle)
    await graph.ainvoke({"log": []}, CONFIG, durability="sync")

    task = await store.get_task("langgraph:t1")
    assert (task.status, task.workflow, task.agent) == (TaskStatus.COMPLETED, THREAD_WORKFLOW, "langgraph")
    assert task.inputs_params == {"thread_id": "t1", "graph": "app:graph"}
    assert task.result == {"thread_id": "t1"}
    [held] = leases
    assert held is not None and held.owner.startswith("langgraph-saver-") and held.is_live()
    after = await store.get_lease("langgraph:t1")
    assert after is None or after.released  # let go when the thread ended
    async with store.reading() as tx:
        view = await load_task_view(tx, "langgraph:t1")
    assert [step.name for step in view.steps] == [
        "step -1 (input): __start__",
        "step 0 (loop): first",
        "step 1 (loop): middle",
        "step 2 (loop)",
    ]
    assert {step.status for step in view.steps} == {StepStatus.COMPLETED}
    assert view.thread is not None and view.thread.pending_writes == []


async def test_a_program_that_resumes_its_own_interrupt_runs_the_task_again_to_its_end(
    store: StateStore,
) -> None:
    def middle(state: State) -> State:
        return {"log": [f"told {interrupt('go on?')}"]}

    graph = build(RatchetSaver(store), middle)
    await graph.ainvoke({"log": []}, CONFIG)
    task = await store.get_task("langgraph:t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)
    async with store.reading() as tx:
        view = await load_task_view(tx, "langgraph:t1")
    assert view.question == "go on?"
    assert view.steps[-1].status is StepStatus.CURRENT
    assert view.thread is not None
    assert [(w.channel, w.node) for w in view.thread.pending_writes] == [("__interrupt__", "middle")]

    assert (await graph.ainvoke(Command(resume="yes"), CONFIG))["log"] == ["first", "told yes"]
    task = await store.get_task("langgraph:t1")
    assert task.status is TaskStatus.COMPLETED
    [asked] = [op for op in await store.list_ops("langgraph:t1") if op.kind is OpKind.QUESTION]
    assert asked.status is OpStatus.SUCCEEDED and asked.meta["answered_by"] == "the program"
    assert [e.kind for e in await store.list_events("langgraph:t1")] == [
        "langgraph_thread",
        "waiting",
        "resumed",
        "completed",
    ]


async def test_a_node_that_fails_fails_the_task_with_its_error(store: StateStore) -> None:
    def middle(state: State) -> State:
        raise RuntimeError("the disk is full")

    with pytest.raises(RuntimeError):
        await build(RatchetSaver(store), middle).ainvoke({"log": []}, CONFIG)
    task = await store.get_task("langgraph:t1")
    assert task.status is TaskStatus.FAILED
    assert task.error == "RuntimeError: the disk is full"


async def test_a_saver_with_tasks_off_makes_no_task(store: StateStore) -> None:
    await build(RatchetSaver(store, tasks=False), lambda state: {"log": ["m"]}).ainvoke({"log": []}, CONFIG)
    with pytest.raises(TaskNotFound):
        await store.get_task("langgraph:t1")
    assert await store.get_lease("langgraph:t1") is None


async def test_a_graph_reference_that_is_not_one_is_refused_in_one_line(store: StateStore) -> None:
    with pytest.raises(ValueError, match="name it as 'module:attribute'") as refused:
        RatchetSaver(store, graph="app.graph")
    assert "\n" not in str(refused.value)


def test_the_threads_workflow_is_found_by_the_reference_its_tasks_record() -> None:
    from ratchet.integrations.langgraph.thread import langgraph_thread

    assert langgraph_thread.reference == THREAD_WORKFLOW


async def test_an_answered_thread_whose_graph_does_not_load_here_waits_for_its_code(
    store: StateStore,
) -> None:
    def middle(state: State) -> State:
        return {"log": [f"told {interrupt('go on?')}"]}

    await build(RatchetSaver(store, graph="no_such_module:graph"), middle).ainvoke({"log": []}, CONFIG)
    runtime = Runtime(store)
    await runtime.answer("langgraph:t1", "yes")
    task = await runtime.resume("langgraph:t1")

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)
    [said] = await store.list_events("langgraph:t1", kinds=("code_missing",))
    assert "no_such_module" in said.message
    graph = build(RatchetSaver(store), middle)
    assert (await graph.aget_state(CONFIG)).next == ("middle",)  # nothing ran


async def test_a_subgraphs_interrupt_is_the_threads_question_and_its_answer_resumes_the_subgraph(
    store: StateStore,
) -> None:
    saver = RatchetSaver(store, graph="tests.integrations.langgraph_approval_graph:nested")
    await approval_graph.nested.compile(checkpointer=saver).ainvoke({"log": []}, CONFIG)
    runtime = Runtime(store)
    assert await _question(store) == "ship it?"

    await runtime.answer("langgraph:t1", "yes")
    assert (await runtime.resume("langgraph:t1")).status is TaskStatus.COMPLETED
    graph = approval_graph.nested.compile(checkpointer=RatchetSaver(store))
    assert (await graph.aget_state(CONFIG)).values["log"] == ["answer: yes", "shipped"]


async def test_two_interrupts_at_once_are_two_questions_answered_one_at_a_time(store: StateStore) -> None:
    saver = RatchetSaver(store, graph="tests.integrations.langgraph_approval_graph:both")
    await approval_graph.both.compile(checkpointer=saver).ainvoke({"log": []}, CONFIG)
    runtime = Runtime(store)
    asked = [op.input["question"] for op in await store.list_ops("langgraph:t1")]
    assert sorted(asked) == ["is the fleet ready?", "may we ship?"]

    first = await _question(store)
    await runtime.answer("langgraph:t1", "first answer")
    task = await runtime.resume("langgraph:t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)  # the other still asks
    second = await _question(store)
    assert {first, second} == set(asked)
    await runtime.answer("langgraph:t1", "second answer")
    assert (await runtime.resume("langgraph:t1")).status is TaskStatus.COMPLETED

    graph = approval_graph.both.compile(checkpointer=RatchetSaver(store))
    told = {"may we ship?": "legal", "is the fleet ready?": "ops"}
    expected = {f"{told[first]}: first answer", f"{told[second]}: second answer"}
    assert set((await graph.aget_state(CONFIG)).values["log"]) == expected
    assert len(await store.list_ops("langgraph:t1")) == 2  # each asked once


async def _question(store: StateStore) -> str:
    async with store.reading() as tx:
        asked = (await load_task_view(tx, "langgraph:t1")).question
    assert asked is not None
    return asked


async def test_a_checkpoint_stored_after_the_interrupt_that_follows_it_leaves_the_task_waiting(
    store: StateStore,
) -> None:
    """LangGraph's "async" durability stores checkpoints in the background: the interrupt's write can
    come before the checkpoint it is on, and before the run's input checkpoint."""

    def middle(state: State) -> State:
        return {"log": [f"told {interrupt('go on?')}"]}

    run = InMemorySaver()
    await build(run, middle).ainvoke({"log": []}, CONFIG)
    made = [found async for found in run.alist(CONFIG)]  # newest first
    saver = RatchetSaver(store)
    latest = made[0]
    for task_id, channel, value in latest.pending_writes or []:
        await saver.aput_writes(latest.config, [(channel, value)], task_id)
    for found in made:  # newest first: the input checkpoint last
        parent = found.parent_config or {"configurable": {"thread_id": "t1", "checkpoint_ns": ""}}
        versions = found.checkpoint["channel_versions"]
        await saver.aput(parent, found.checkpoint, found.metadata, versions)

    task = await store.get_task("langgraph:t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)
    assert [e.kind for e in await store.list_events("langgraph:t1")] == ["langgraph_thread", "waiting"]


async def test_a_run_stopped_at_a_breakpoint_waits_for_a_person_when_its_saver_closes(
    store: StateStore,
) -> None:
    saver = RatchetSaver(store, graph="tests.integrations.langgraph_approval_graph:paused")
    graph = approval_graph.paused.copy(update={"checkpointer": saver})
    await graph.ainvoke({"log": []}, CONFIG)
    assert (await store.get_task("langgraph:t1")).status is TaskStatus.RUNNING  # its program may go on
    await saver.arelease()  # the program is done with it: no worker should take it as crashed

    task = await store.get_task("langgraph:t1")
    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.INPUT)
    assert (await _question(store)).startswith("the run stopped before ship (a breakpoint")
    runtime = Runtime(store)
    await runtime.answer("langgraph:t1", "go")
    assert (await runtime.resume("langgraph:t1")).status is TaskStatus.COMPLETED
    assert (await graph.aget_state(CONFIG)).values["log"] == ["planned", "held"]


async def test_a_saver_that_names_the_graph_later_makes_the_threads_interrupt_answerable(
    store: StateStore,
) -> None:
    unnamed = RatchetSaver(store)
    await approval_graph.builder.compile(checkpointer=unnamed).ainvoke({"log": []}, CONFIG)
    runtime = Runtime(store)
    with pytest.raises(InputError, match="named no graph"):
        await runtime.answer("langgraph:t1", "yes")

    named = RatchetSaver(store, graph="tests.integrations.langgraph_approval_graph:builder")
    await approval_graph.builder.compile(checkpointer=named).ainvoke(None, CONFIG)  # asks again
    task = await store.get_task("langgraph:t1")
    assert task.inputs_params["graph"] == "tests.integrations.langgraph_approval_graph:builder"
    assert len(await store.list_ops("langgraph:t1")) == 1  # the same question, now answerable
    await runtime.answer("langgraph:t1", "yes")
    assert (await runtime.resume("langgraph:t1")).status is TaskStatus.COMPLETED
    graph = approval_graph.builder.compile(checkpointer=named)
    assert (await graph.aget_state(CONFIG)).values["log"] == ["planned", "answer: yes", "shipped"]


async def test_a_saver_without_a_graph_leaves_the_graph_an_earlier_one_named(store: StateStore) -> None:
    named = RatchetSaver(store, graph="tests.integrations.langgraph_approval_graph:builder")
    await approval_graph.builder.compile(checkpointer=named).ainvoke({"log": []}, CONFIG)
    await approval_graph.builder.compile(checkpointer=RatchetSaver(store)).ainvoke(None, CONFIG)  # asks again

    task = await store.get_task("langgraph:t1")
    assert task.inputs_params["graph"] == "tests.integrations.langgraph_approval_graph:builder"
    runtime = Runtime(store)
    await runtime.answer("langgraph:t1", "no")  # still answerable
    assert (await runtime.resume("langgraph:t1")).status is TaskStatus.COMPLETED
