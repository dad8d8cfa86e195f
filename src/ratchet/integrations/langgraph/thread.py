"""`langgraph_thread`: the workflow a LangGraph thread's task runs when Ratchet resumes it.

A thread's task is made by the saver that first writes the thread
(_thread_tasks.py), and runs in that program. Ratchet runs it itself (a
`ratchet worker`, or ``ratchet resume TASK``) when a person has answered its
interrupt, or when the program that ran it died mid-run: this workflow
imports the graph the saver named (``RatchetSaver(..., graph="module:attr")``,
as LangGraph Platform's ``langgraph.json`` names a graph), compiles it with a
`RatchetSaver` on the task's store, and goes on from the thread's latest
checkpoint:

- interrupts whose questions a person answered: ``Command(resume=ANSWER)``
  (with several interrupts open, a map of each answered interrupt's id to
  its answer, as LangGraph takes it);
- interrupts with no answer yet: the task waits for input again;
- a checkpoint with something next (a crash mid-run, or a run its program
  or a static breakpoint stopped, once a person answered): ``invoke(None)``;
- nothing next: nothing runs.

Then the thread's new interrupts are its questions (and a static
breakpoint that stops it again, one), or the task completes.
The answer is the text a person gave (``ratchet answer TASK TEXT``): a graph
that wants structure reads it (``json.loads``). The graph is code: the task's
seal covers its reference, and the run's code trust decides if it loads; it
is imported before the run writes anything (the workflow's `tools_for`), so a
graph that does not load here leaves the task ``waiting(code)``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command

from ...engine.context import Context
from ...engine.workflow import Workflow, load_module
from ...errors import WorkflowNotFound
from ...records import OpStatus, WaitReason
from ...tools import Tool
from ._saver import RatchetSaver
from ._thread_tasks import cannot_resume, newest_questions, record_interrupts, stopped_question

__all__ = ["find_graph", "langgraph_thread", "load_graph"]


def find_graph(reference: str) -> Any:
    """What `reference` (``module:attribute``) names, imported as the run's code trust admits.

    Raises:
        CodeRefused: the code trust the run enforces does not admit its module or file.
        WorkflowNotFound: no such module or attribute.
    """
    source, _, name = reference.rpartition(":")
    found: Any = load_module(source)
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise WorkflowNotFound(f"{source} has no {name!r}, the graph of a LangGraph thread")
    return found


def load_graph(reference: str, saver: RatchetSaver) -> Pregel[Any, Any, Any, Any]:
    """The graph `reference` names, compiled with `saver` as its checkpointer.

    Raises:
        CodeRefused: the run's code trust does not admit it.
        WorkflowNotFound: no such module or attribute, or it is not a graph.
    """
    found = find_graph(reference)
    if callable(found) and not isinstance(found, (StateGraph, Pregel)):
        found = found()  # a graph factory, as LangGraph Platform takes one
    if isinstance(found, StateGraph):
        return found.compile(checkpointer=saver)
    if isinstance(found, Pregel):
        return found.copy(update={"checkpointer": saver})
    raise WorkflowNotFound(f"{reference} is a {type(found).__name__}, not a StateGraph or a compiled graph")


def _graph_loads(task: Any, store: Any) -> list[Tool]:
    """Import the thread's graph before the run writes anything: one that does not load here leaves
    the task ``waiting(code)``, as a workflow's missing module does (engine/run/code_wait.py)."""
    graph = task.inputs_params.get("graph")
    if isinstance(graph, str):
        find_graph(graph)
    return []


def _thread_workflow(fn: Callable[..., Awaitable[Any]]) -> Workflow:
    return Workflow(fn, name="langgraph", code_inputs=("graph",), tools_for=_graph_loads)


@_thread_workflow
async def langgraph_thread(ctx: Context, thread_id: str, graph: str | None = None) -> dict[str, str]:
    """Go on with a LangGraph thread from its latest checkpoint, as the module docstring says."""
    if graph is None:
        await ctx.suspend(WaitReason.CODE, cannot_resume(thread_id))
    assert graph is not None
    saver = RatchetSaver(ctx.store, tasks=False)
    compiled = load_graph(graph, saver)
    config: Any = {"configurable": {"thread_id": thread_id}}
    state = await compiled.aget_state(config)
    if state.interrupts:
        asked = newest_questions(await ctx.store.list_ops(ctx.task_id))
        answers = {}
        for interrupt in state.interrupts:
            op = asked.get(interrupt.id)
            if op is not None and op.status is OpStatus.SUCCEEDED:
                answers[interrupt.id] = op.output
        if not answers:
            await _wait(ctx, thread_id, [(str(i.id), i.value) for i in state.interrupts])
        resume = next(iter(answers.values())) if len(state.interrupts) == 1 else answers
        await compiled.ainvoke(Command(resume=resume), config)
    elif state.next:
        await compiled.ainvoke(None, config)
    state = await compiled.aget_state(config)
    if state.interrupts:
        await _wait(ctx, thread_id, [(str(i.id), i.value) for i in state.interrupts])
    if state.next:  # a static breakpoint (interrupt_before / interrupt_after) stopped it
        checkpoint_id = str((state.config.get("configurable") or {}).get("checkpoint_id"))
        await _wait(ctx, thread_id, [(f"stopped:{checkpoint_id}", stopped_question(state.next))])
    return {"thread_id": thread_id}


async def _wait(ctx: Context, thread_id: str, interrupts: list[tuple[str, Any]]) -> None:
    """Ask the thread's open interrupts as questions (those not asked yet), and wait for input."""
    async with ctx.store.transaction(fence=ctx.lease) as tx:
        await record_interrupts(tx, ctx.task_id, interrupts, unanswerable=None)
    await ctx.suspend(
        WaitReason.INPUT,
        f"LangGraph thread {thread_id!r} waits at an interrupt() "
        f"(answer it with `ratchet answer {ctx.task_id} TEXT`)",
    )
