"""RatchetAgent.run_stream (and iter): a streamed run is durable, its text handed over as the model writes it.

pydantic-ai's own `FunctionModel` streams the answers (pydai_support.streaming);
the stores are real (memory and a SQLite file). The kill mid-stream is in
test_pydantic_ai_stream_crash.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models.function import AgentInfo, FunctionModel

import ratchet
from ratchet import RetryPolicy, Runtime, TaskStatus, WaitReason
from ratchet.engine.context import Context
from ratchet.errors import InputError
from ratchet.integrations.pydantic_ai import RatchetAgent
from ratchet.records import OpKind, OpStatus, StreamKind
from ratchet.runtime.streams import answers, attempts
from ratchet.store import StateStore

from .pydai_support import PIECES, Counts, streaming

ANSWER = "".join(PIECES)


def _agent(counts: Counts, *, tool: str | None = None) -> Agent[Any, Any]:
    agent = Agent(streaming(counts, tool=tool), name="streamer")

    @agent.tool_plain(metadata={"ratchet": {"risk": "read_only"}})
    def look_up() -> str:
        """Look the trip up."""
        counts.tools.append({})
        return "two items"

    return agent


async def _pieces(result: Any) -> list[str]:
    return [piece async for piece in result.stream_text(delta=True, debounce_by=None)]


async def test_outside_a_workflow_the_text_arrives_in_pieces_and_the_run_is_a_task(store: StateStore) -> None:
    counts = Counts()
    streamer = RatchetAgent(_agent(counts), store=store)

    async with streamer.run_stream("book the trip", task_id="stream-1") as result:
        pieces = await _pieces(result)
        output = await result.get_output()

    assert pieces == list(PIECES)  # one by one, in order, as the model wrote them
    assert output == ANSWER
    assert counts.model == 1
    task = await store.get_task("stream-1")
    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict) and task.result["output"] == ANSWER
    ops = await store.list_ops("stream-1")
    assert [(op.kind, op.name, op.status) for op in ops] == [
        (OpKind.MODEL, "model:streamer", OpStatus.SUCCEEDED)
    ]
    assert ops[0].meta["usage"]["completion_tokens"] > 0  # the budget counts a streamed answer too
    entries = await store.read_stream("stream-1", from_offset=0, limit=100)  # what its readers see
    assert [e.value for e in entries if e.kind is StreamKind.TEXT] == list(PIECES)
    assert [(e.kind, e.seq) for e in entries if e.kind is not StreamKind.TEXT] == [
        (StreamKind.ATTEMPT, 0),
        (StreamKind.END, 0),
    ]
    assert answers(entries) == {0: ANSWER}


async def test_each_piece_reaches_the_reader_before_the_model_writes_the_next(store: StateStore) -> None:
    read: list[str] = []
    more = asyncio.Condition()

    def read_all_but(count: int) -> Callable[[], bool]:
        return lambda: len(read) == count

    async def lockstep(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        for count, piece in enumerate(PIECES):
            async with more:  # the next piece only once the reader has this one: nothing is held back
                await asyncio.wait_for(more.wait_for(read_all_but(count)), timeout=30)  # a hang guard
            yield piece

    def whole(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise AssertionError("a streamed run streams each request")

    model = FunctionModel(whole, stream_function=lockstep)
    streamer = RatchetAgent(Agent(model, name="lockstep"), store=store)
    async with streamer.run_stream("book the trip") as result:
        async for piece in result.stream_text(delta=True, debounce_by=None):
            async with more:
                read.append(piece)
                more.notify_all()

    assert read == list(PIECES)


async def test_a_completed_streamed_run_replays_without_calling_the_model(store: StateStore) -> None:
    counts = Counts()
    streamer = RatchetAgent(_agent(counts, tool="look_up"), store=store)
    async with streamer.run_stream("book the trip", task_id="stream-2") as first:
        assert await _pieces(first) == list(PIECES)
        live = [m for m in first.all_messages() if isinstance(m, ModelResponse)]
    ran = (counts.model, len(counts.tools))
    written = await store.read_stream("stream-2", from_offset=0, limit=100)
    assert answers(written) == {0: "", 2: ANSWER}  # a call of the tool has no text; the tool is seq 1

    async with streamer.run_stream("book the trip", task_id="stream-2") as again:
        replayed_text = [text async for text in again.stream_text(debounce_by=None)]
        output = await again.get_output()
        replayed = [m for m in again.all_messages() if isinstance(m, ModelResponse)]

    assert (counts.model, len(counts.tools)) == ran == (2, 1)  # nothing ran again
    assert output == ANSWER
    assert replayed_text[-1] == ANSWER  # the journaled answer, given whole
    assert replayed == live  # the same ModelResponses, read back from the journal
    assert [op.kind for op in await store.list_ops("stream-2")] == [OpKind.MODEL, OpKind.TOOL, OpKind.MODEL]
    assert await store.read_stream("stream-2", from_offset=0, limit=100) == written  # nothing written again


async def test_a_streamed_run_and_a_plain_run_of_the_same_task_agree(store: StateStore) -> None:
    counts = Counts()
    streamer = RatchetAgent(_agent(counts), store=store)
    async with streamer.run_stream("book the trip", task_id="stream-3") as streamed:
        streamed_output = await streamed.get_output()  # read whole, never piece by piece

    plain = await streamer.run("book the trip", task_id="stream-3")  # the completed task, replayed

    assert plain.output == streamed_output == ANSWER
    assert counts.model == 1


async def test_leaving_the_block_early_ends_the_reading_not_the_run(store: StateStore) -> None:
    counts = Counts()
    streamer = RatchetAgent(_agent(counts), store=store)

    async with streamer.run_stream("book the trip", task_id="stream-4") as result:
        async for piece in result.stream_text(delta=True, debounce_by=None):
            assert piece == PIECES[0]
            break

    task = await store.get_task("stream-4")  # the run read the rest itself and completed
    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict) and task.result["output"] == ANSWER
    assert answers(await store.read_stream("stream-4", from_offset=0, limit=100)) == {0: ANSWER}


async def test_a_block_that_fails_leaves_the_run_unfinished_for_a_later_run_stream(store: StateStore) -> None:
    counts = Counts()
    streamer = RatchetAgent(_agent(counts), store=store)

    with pytest.raises(KeyError):
        async with streamer.run_stream("book the trip", task_id="stream-5"):
            raise KeyError("the reader's own error")

    assert (await store.get_task("stream-5")).status is not TaskStatus.COMPLETED
    async with streamer.run_stream("book the trip", task_id="stream-5") as result:  # resumed here
        assert await result.get_output() == ANSWER
    assert (await store.get_task("stream-5")).status is TaskStatus.COMPLETED


async def test_cancelling_a_live_answer_is_refused(store: StateStore) -> None:
    streamer = RatchetAgent(_agent(Counts()), store=store)

    async with streamer.run_stream("book the trip", task_id="stream-6") as result:
        with pytest.raises(NotImplementedError, match="cancellation is not implemented"):
            await result.cancel()  # a partial answer could not be replayed
        assert await result.get_output() == ANSWER

    assert (await store.get_task("stream-6")).status is TaskStatus.COMPLETED


async def test_a_streamed_run_outside_a_workflow_takes_no_options(store: StateStore) -> None:
    streamer = RatchetAgent(_agent(Counts()), store=store)

    with pytest.raises(InputError, match="not model_settings, output_type"):
        async with streamer.run_stream("hi", output_type=int, model_settings={}):
            pass
    assert await store.list_tasks() == []  # nothing stored


RUN_COUNTS = Counts()
STREAMER = RatchetAgent(_agent(RUN_COUNTS, tool="look_up"), name="workflow-streamer")
SEEN: list[list[str]] = []


@ratchet.workflow
async def stream_then_confirm(ctx: Context) -> dict[str, Any]:
    """Stream the agent's answer, then wait for a person: the answer resumes the workflow from the top."""
    async with STREAMER.run_stream("book the trip") as result:
        SEEN.append(await _pieces(result))
        output = await result.get_output()
    answer = await ctx.ask_user("was the booking right?")
    return {"output": output, "answer": answer}


@ratchet.workflow
async def iterate(ctx: Context) -> list[str]:
    """Drive the agent's run node by node."""
    async with STREAMER.iter("book the trip") as run:
        nodes = [type(node).__name__ async for node in run]
    assert run.result is not None and run.result.output == ANSWER
    return nodes


async def _ignore_events(ctx: Any, events: Any) -> None:
    async for _ in events:
        pass


@ratchet.workflow
async def with_a_handler(ctx: Context) -> str:
    """A plain run with an event stream handler, which streams each request."""
    result = await STREAMER.run("book the trip", event_stream_handler=_ignore_events)
    return str(result.output)


FLAKY_COUNTS = Counts()


async def _cut_once(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    """The answer, but the first attempt's connection drops after two pieces."""
    FLAKY_COUNTS.model += 1
    for count, piece in enumerate(PIECES, start=1):
        yield piece
        if FLAKY_COUNTS.model == 1 and count == 2:
            raise ConnectionError("the provider's stream was cut")


FLAKY = RatchetAgent(Agent(FunctionModel(stream_function=_cut_once), name="flaky"))


@ratchet.workflow(retry=RetryPolicy(initial_interval=0.01))
async def retried(ctx: Context) -> dict[str, Any]:
    """Stream an answer whose first attempt is cut off."""
    async with FLAKY.run_stream("book the trip") as result:
        pieces = await _pieces(result)
        return {"pieces": pieces, "output": await result.get_output()}


@pytest.fixture
async def rt(store: StateStore) -> AsyncIterator[Runtime]:
    RUN_COUNTS.model, RUN_COUNTS.tools[:], SEEN[:], FLAKY_COUNTS.model = 0, [], [], 0
    async with Runtime(store) as runtime:
        yield runtime


async def test_in_a_workflow_the_stream_is_the_tasks_and_a_resume_replays_it(rt: Runtime) -> None:
    waiting = await rt.run(stream_then_confirm)
    assert waiting.waiting_on is WaitReason.INPUT
    assert SEEN[0] == list(PIECES)  # the live answer, piece by piece
    ran = (RUN_COUNTS.model, len(RUN_COUNTS.tools))

    await rt.answer(waiting.id, "yes")
    done = await rt.resume(waiting.id)

    assert done.status is TaskStatus.COMPLETED
    assert done.result == {"output": ANSWER, "answer": "yes"}
    assert (RUN_COUNTS.model, len(RUN_COUNTS.tools)) == ran == (2, 1)  # replayed: nothing ran again
    assert SEEN[1] == [ANSWER]  # the replayed answer arrives whole
    ops = await rt.store.list_ops(waiting.id)
    assert [op.kind for op in ops if op.kind in (OpKind.MODEL, OpKind.TOOL)] == [
        OpKind.MODEL,
        OpKind.TOOL,
        OpKind.MODEL,
    ]


async def test_iter_in_a_workflow_journals_each_request_and_call(rt: Runtime) -> None:
    task = await rt.run(iterate)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert isinstance(task.result, list) and task.result[-1] == "End"
    assert [op.kind for op in await rt.store.list_ops(task.id)] == [OpKind.MODEL, OpKind.TOOL, OpKind.MODEL]


async def test_a_run_with_an_event_stream_handler_streams_each_request(rt: Runtime) -> None:
    task = await rt.run(with_a_handler)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.result == ANSWER
    assert [op.kind for op in await rt.store.list_ops(task.id)] == [OpKind.MODEL, OpKind.TOOL, OpKind.MODEL]


async def test_iter_outside_a_workflow_says_where_it_works() -> None:
    with pytest.raises(InputError, match="inside a workflow only"):
        async with STREAMER.iter("book the trip"):
            pass


async def test_an_attempt_cut_off_midway_is_retried_and_the_output_is_the_answer_that_completed(
    rt: Runtime,
) -> None:
    task = await rt.run(retried)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert FLAKY_COUNTS.model == 2
    assert isinstance(task.result, dict)
    # pydantic-ai cannot take text back: its reader has the cut attempt's pieces, then the retry's.
    assert task.result["pieces"] == [*PIECES[:2], *PIECES]
    assert task.result["output"] == ANSWER  # the journaled answer, the one that completed
    (op,) = await rt.store.list_ops(task.id)
    assert (op.kind, op.status, op.attempt) == (OpKind.MODEL, OpStatus.SUCCEEDED, 2)
    tried = attempts(await rt.store.read_stream(task.id, from_offset=0, limit=100))
    assert (
        [(a.attempt, a.text, a.outcome) for a in tried]
        == [  # the task's stream keeps them apart
            (1, "".join(PIECES[:2]), "failed"),
            (2, ANSWER, "succeeded"),
        ]
    )
