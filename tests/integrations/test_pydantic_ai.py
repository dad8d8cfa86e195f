"""RatchetAgent: a pydantic-ai agent's run as a Ratchet task, its model requests and tool calls journaled.

pydantic-ai's own `FunctionModel` answers; the stores are real (memory and
a SQLite file; the crash test, test_pydantic_ai_crash.py, adds PostgreSQL).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse
from pydantic_ai.models import Model

import ratchet
from ratchet import Budget, Runtime, TaskStatus, WaitReason
from ratchet.engine.context import Context
from ratchet.errors import AgentRunNotCompleted, InputError, WorkflowNotFound
from ratchet.integrations.pydantic_ai import RatchetAgent, tool_context
from ratchet.integrations.pydantic_ai.workflow import find_agent
from ratchet.records import CapScope, Limit, OpKind, OpStatus, SpendCap, utcnow
from ratchet.store import StateStore

from ..unit.test_extras import _python
from ..unit.test_layers import SRC, import_graph
from .pydai_support import Counts, calling


@pytest.fixture(params=["memory", "sqlite"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _agent(
    counts: Counts, *, metadata: dict[str, Any] | None = None, retry_first: bool = False
) -> Agent[Any, Any]:
    agent = Agent(calling("send", {"to": "ops"}, counts), name="mailer")

    @agent.tool_plain(metadata=metadata)
    def send(to: str) -> str:
        """Send a message."""
        counts.tools.append({"to": to, "key": tool_context().idempotency_key})
        if retry_first and len(counts.tools) == 1:
            raise ModelRetry("the mail server was busy; try again")
        return f"sent to {to}"

    return agent


async def test_a_run_journals_each_model_request_and_tool_call(store: StateStore) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts), store=store)

    result = await mailer.run("tell ops", task_id="mail-1")

    assert result.output == "the tool said: sent to ops"
    ops = await store.list_ops("mail-1")
    assert [(op.kind, op.name, op.status) for op in ops] == [
        (OpKind.MODEL, "model:mailer", OpStatus.SUCCEEDED),
        (OpKind.TOOL, "send", OpStatus.SUCCEEDED),
        (OpKind.MODEL, "model:mailer", OpStatus.SUCCEEDED),
    ]
    assert ops[1].input == {"to": "ops"}
    assert counts.tools == [{"to": "ops", "key": "mail-1:1"}]  # the tool saw its idempotency key
    assert ops[0].meta["usage"]["prompt_tokens"] > 0  # counted by the budget, replays included
    task = await store.get_task("mail-1")
    assert task.status is TaskStatus.COMPLETED
    assert isinstance(task.result, dict) and task.result["output"] == "the tool said: sent to ops"


COUNTS = Counts()
RESULTS: list[Any] = []
REPLAYED = RatchetAgent(_agent(COUNTS, retry_first=True), name="replayed")


@ratchet.workflow
async def mail_then_confirm(ctx: Context) -> dict[str, Any]:
    """Run the agent, then wait for a person: the answer resumes the workflow from the top."""
    result = await REPLAYED.run("tell ops")
    RESULTS.append(result)
    answer = await ctx.ask_user("was the mail right?")
    return {"output": result.output, "answer": answer}


@pytest.fixture
async def rt(store: StateStore) -> AsyncIterator[Runtime]:
    COUNTS.model, COUNTS.tools[:], RESULTS[:] = 0, [], []
    async with Runtime(store) as runtime:
        yield runtime


async def test_a_resumed_workflow_replays_the_run_without_calling_the_model_or_tools(rt: Runtime) -> None:
    waiting = await rt.run(mail_then_confirm)
    assert waiting.waiting_on is WaitReason.INPUT
    ran = (COUNTS.model, list(COUNTS.tools))
    assert ran == (3, [{"to": "ops", "key": f"{waiting.id}:1"}, {"to": "ops", "key": f"{waiting.id}:3"}])

    await rt.answer(waiting.id, "yes")
    done = await rt.resume(waiting.id)

    assert done.status is TaskStatus.COMPLETED
    assert (COUNTS.model, COUNTS.tools) == ran  # replayed: nothing ran again
    assert done.result == {"output": "the tool said: sent to ops", "answer": "yes"}
    first, replayed = (
        [m for m in result.all_messages() if isinstance(m, ModelResponse)] for result in RESULTS
    )
    assert replayed == first  # the same ModelResponses, read back from the journal
    assert len(first) == 3
    assert ModelMessagesTypeAdapter.dump_json(RESULTS[1].new_messages()) is not None


async def test_an_external_action_tool_waits_for_approval_then_runs_once(
    rt: Runtime, store: StateStore
) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts, metadata={"ratchet": {"risk": "external_action"}}), store=store)

    with pytest.raises(AgentRunNotCompleted, match="waiting") as stopped:
        await mailer.run("tell ops", task_id="mail-2")
    assert stopped.value.task.waiting_on is WaitReason.APPROVAL
    assert counts.tools == []

    await rt.approve("mail-2", edit_args={"to": "ops-lead"})
    result = await mailer.run("tell ops", task_id="mail-2")

    assert result.output == "the tool said: sent to ops-lead"
    assert counts.tools == [{"to": "ops-lead", "key": "mail-2:1"}]


async def test_a_denied_call_is_told_to_the_model(rt: Runtime, store: StateStore) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts, metadata={"ratchet": {"risk": "external_action"}}), store=store)
    with pytest.raises(AgentRunNotCompleted):
        await mailer.run("tell ops", task_id="mail-3")

    await rt.deny("mail-3", "not today")
    result = await mailer.run("tell ops", task_id="mail-3")

    assert "denied" in result.output and "not today" in result.output
    assert counts.tools == []


async def test_a_budget_stops_the_run(store: StateStore) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts), store=store, budget=Budget(max_llm_tokens=10))

    with pytest.raises(AgentRunNotCompleted, match="budget exceeded") as stopped:
        await mailer.run("tell ops", task_id="mail-4")

    assert stopped.value.task.status is TaskStatus.FAILED
    assert counts.model == 1 and counts.tools == []


async def test_a_spend_cap_reached_holds_the_run_s_model_requests(store: StateStore) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts), store=store)
    await mailer.run("tell ops", task_id="mail-5")
    agent = (await store.get_task("mail-5")).agent
    await store.set_spend_cap(SpendCap(scope=CapScope.AGENT, name=agent, daily=0.01))
    await store.count_spend("mail-5", 0.02, day=utcnow().date())  # as a priced request would have

    with pytest.raises(AgentRunNotCompleted, match=f"spend cap agent:{agent} reached") as stopped:
        await mailer.run("tell ops", task_id="mail-6")

    assert stopped.value.task.status is TaskStatus.FAILED
    assert counts.model == 2 and await store.list_ops("mail-6") == []  # the first run's two requests only


async def test_the_rate_limits_of_the_pydantic_ai_models_key_hold_its_requests(store: StateStore) -> None:
    counts = Counts()
    agent = _agent(counts)
    model = agent.model
    assert isinstance(model, Model)
    await store.set_limit(Limit(key=model.system, rpm=1))  # the provider's key, as `ratchet limit set`

    with pytest.raises(AgentRunNotCompleted, match="waiting") as held:
        await RatchetAgent(agent, store=store).run("tell ops", task_id="limited-1")

    assert held.value.task.waiting_on is WaitReason.LIMIT  # the second request waits a minute for its turn
    waiting = [event for event in await store.list_events("limited-1") if event.kind == "waiting"]
    assert waiting[-1].data["limit"] == model.system
    assert counts.model == 1


async def test_a_run_outside_a_workflow_takes_no_options(store: StateStore) -> None:
    mailer = RatchetAgent(_agent(Counts()), store=store)
    with pytest.raises(InputError, match="not output_type"):
        await mailer.run("tell ops", output_type=int)
    assert await store.list_tasks() == []  # nothing stored


def test_an_agent_needs_a_name() -> None:
    with pytest.raises(InputError, match="name"):
        RatchetAgent(Agent(calling("send", {}, Counts())))


def test_a_worker_finds_a_module_level_agent_by_name() -> None:
    assert find_agent(__name__, "replayed") is REPLAYED
    assert REPLAYED.source == __name__
    with pytest.raises(WorkflowNotFound, match="no RatchetAgent named 'nobody'"):
        find_agent(__name__, "nobody")


def test_a_script_records_its_file(tmp_path: Path) -> None:
    from ratchet.integrations.pydantic_ai._agent import _defining_module

    script = tmp_path / "app.py"
    assert _defining_module({"__name__": "__main__", "__file__": str(script)}) == str(script.resolve())
    assert _defining_module({"__name__": "myapp.agents", "__file__": "x.py"}) == "myapp.agents"


def test_without_pydantic_ai_the_bridge_names_its_extra_and_ratchet_still_imports(tmp_path: Path) -> None:
    done = _python(["-c", "import ratchet.integrations.pydantic_ai"], tmp_path, without_extras=True)
    assert done.returncode == 1
    line = "needs pydantic-ai: pip install 'ratchet-runtime[pydantic-ai]'"
    assert done.stderr.strip().splitlines()[-1].endswith(line), done.stderr
    assert _python(["-c", "import ratchet, ratchet.runtime"], tmp_path, without_extras=True).returncode == 0


def test_nothing_of_ratchet_imports_the_bridge() -> None:
    # The CLI sits above every layer: `ratchet langgraph import` loads its bridge when it runs.
    importers = [
        f"{module} imports {imported}"
        for module, imported_modules in sorted(import_graph(SRC).items())
        if not module.startswith(("ratchet.integrations", "ratchet.cli"))
        for imported in sorted(imported_modules)
        if imported.startswith("ratchet.integrations")
    ]
    assert importers == []


def test_the_recorded_workflow_reference_names_the_workflow() -> None:
    from ratchet.integrations.pydantic_ai._agent import AGENT_RUN
    from ratchet.integrations.pydantic_ai.workflow import agent_run

    assert agent_run.reference == AGENT_RUN


async def test_a_task_whose_agent_is_not_found_waits_for_its_code(rt: Runtime) -> None:
    from ratchet.integrations.pydantic_ai._agent import AGENT_RUN

    task_id = await rt.submit(AGENT_RUN, {"agent": "nobody", "source": __name__, "prompt": "hi"}, queue=False)
    task = await rt.resume(task_id)

    assert (task.status, task.waiting_on) == (TaskStatus.WAITING, WaitReason.CODE)


async def test_with_pydantic_ais_test_model_the_output_is_the_plain_runs(store: StateStore) -> None:
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel(), name="adder")

    @agent.tool_plain(metadata={"ratchet": {"risk": "read_only"}})
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b + 1

    plain = await agent.run("add")
    durable = await RatchetAgent(agent, store=store).run("add", task_id="add-1")

    assert durable.output == plain.output
    ops = await store.list_ops("add-1")
    assert [(op.kind, op.name) for op in ops] == [
        (OpKind.MODEL, "model:adder"),
        (OpKind.TOOL, "add"),
        (OpKind.MODEL, "model:adder"),
    ]


def test_tool_context_outside_a_journaled_call_says_where_it_works() -> None:
    with pytest.raises(InputError, match="a tool that a RatchetAgent runs"):
        tool_context()


DELEGATE_COUNTS = Counts()
WRITER = RatchetAgent(_agent(DELEGATE_COUNTS), name="writer")
LEAD_COUNTS = Counts()
LEAD = Agent(calling("delegate", {"topic": "ops"}, LEAD_COUNTS), name="lead")


@LEAD.tool_plain(metadata={"ratchet": {"uses_key": True}})
async def delegate(topic: str) -> str:
    """Have the writer agent do it."""
    LEAD_COUNTS.tools.append({"topic": topic, "key": tool_context().idempotency_key})
    return str((await WRITER.run(f"tell {topic}")).output)


LEAD_AGENT = RatchetAgent(LEAD)


@ratchet.workflow
async def delegation(ctx: Context) -> dict[str, Any]:
    """A lead agent whose tool runs another agent, then a question that makes the workflow replay."""
    result = await LEAD_AGENT.run("get it done")
    return {"output": result.output, "answer": await ctx.ask_user("ok?")}


async def test_an_agent_a_tool_delegates_to_runs_inside_that_tools_journal_entry(
    rt: Runtime, store: StateStore
) -> None:
    for counts in (LEAD_COUNTS, DELEGATE_COUNTS):
        counts.model, counts.tools[:] = 0, []
    waiting = await rt.run(delegation)
    await rt.answer(waiting.id, "yes")
    done = await rt.resume(waiting.id)

    assert done.status is TaskStatus.COMPLETED
    assert done.result == {"output": "the tool said: the tool said: sent to ops", "answer": "yes"}
    assert (LEAD_COUNTS.model, DELEGATE_COUNTS.model, len(DELEGATE_COUNTS.tools)) == (2, 2, 1)  # once each
    ops = await store.list_ops(waiting.id)
    assert [(op.kind, op.name) for op in ops[:3]] == [
        (OpKind.MODEL, "model:lead"),
        (OpKind.TOOL, "delegate"),
        (OpKind.MODEL, "model:lead"),
    ]


@ratchet.tool(idempotent=True)
async def ask_the_writer(topic: str) -> str:
    """A Ratchet tool that delegates to a RatchetAgent."""
    return str((await WRITER.run(f"tell {topic}")).output)


@ratchet.workflow(tools=[ask_the_writer])
async def ratchet_tool_delegation(ctx: Context) -> JsonValue:
    return await ctx.call_tool("ask_the_writer", {"topic": "ops"})


async def test_a_ratchet_tool_that_runs_an_agent_runs_it_inside_its_journal_entry(
    rt: Runtime, store: StateStore
) -> None:
    DELEGATE_COUNTS.model, DELEGATE_COUNTS.tools[:] = 0, []
    task = await rt.run(ratchet_tool_delegation)

    assert task.status is TaskStatus.COMPLETED
    assert task.result == "the tool said: sent to ops"
    assert [op.name for op in await store.list_ops(task.id)] == ["ask_the_writer"]
    assert DELEGATE_COUNTS.model == 2


async def test_running_a_completed_task_again_replays_its_result(store: StateStore) -> None:
    counts = Counts()
    mailer = RatchetAgent(_agent(counts), store=store)
    first = await mailer.run("tell ops", task_id="mail-5")
    ran = (counts.model, list(counts.tools))

    again = await mailer.run("tell ops", task_id="mail-5")

    assert (counts.model, counts.tools) == ran  # nothing ran again
    assert again.output == first.output
    responses = [[m for m in r.all_messages() if isinstance(m, ModelResponse)] for r in (first, again)]
    assert responses[1] == responses[0]  # the requests differ only in when pydantic-ai made them
    assert len(await store.list_ops("mail-5")) == 3  # and nothing was written


async def test_a_completed_task_whose_journal_does_not_replay_says_so(store: StateStore) -> None:
    await RatchetAgent(_agent(Counts()), store=store).run("tell ops", task_id="mail-6")
    changed = Agent(calling("send", {"to": "ops"}, Counts()), name="mailer")  # now without its tool

    with pytest.raises(AgentRunNotCompleted, match="does not replay with this code"):
        await RatchetAgent(changed, store=store).run("tell ops", task_id="mail-6")
