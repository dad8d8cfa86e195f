"""The agent's working memory (update_state), its built-in tools, and the spec a task records."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ratchet
from ratchet import Agent, InputError, Runtime, TaskStatus
from ratchet.agent.builtin_tools import BUILTIN_TOOL_NAMES, builtin_tools
from ratchet.records import Constraints, HumanInTheLoop
from ratchet.store import StateStore

from ..helpers import agent_tools
from ..helpers.scripts import calls, plan, say, verdict
from .support import INSTRUCTIONS, events_of, make_agent, model_ops, run_agent

FACTS = {
    "ops": [
        {"op": "append_facts", "facts": [{"key": "x_status", "value": "degraded"}]},
        {"op": "add_open_questions", "questions": ["why is X slow?"]},
    ]
}


async def test_update_state_changes_the_working_memory_and_the_next_steps_prompt_shows_it(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X", "restart X")],
                "act": [calls(("update_state", FACTS)), say("noted"), say("restarted")],
                "verify": [verdict(True), verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert [(f.key, f.value) for f in task.state.known_facts] == [("x_status", "degraded")]
    assert task.state.open_questions == ["why is X slow?"]
    acts = await model_ops(store, task.id, "act")
    assert acts[1].input["messages"][-1]["content"] == "state updated"
    system = acts[2].input["messages"][0]["content"]
    assert "why is X slow?" in system and "x_status" in system and "degraded" in system
    assert any("append_facts" in e.message for e in await events_of(store, task.id, "state"))
    assert "update_state" not in {op.name for op in await store.list_ops(task.id) if op.kind == "tool"}


async def test_a_state_patch_that_does_not_apply_is_fed_back_and_changes_nothing(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("look at X")],
                "act": [
                    calls(
                        ("update_state", {"ops": [{"op": "resolve_question", "question": "never asked"}]}),
                        ("update_state", {"ops": [{"op": "forget_everything"}]}),
                    ),
                    say("fine"),
                ],
                "verify": [verdict(True)],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    not_open, unknown = (await model_ops(store, task.id, "act"))[1].input["messages"][-2:]
    assert not_open["content"].startswith("error:") and "not an open question" in not_open["content"]
    assert unknown["content"].startswith("error: the state patch is not valid")
    assert task.state.known_facts == [] and task.state.open_questions == []


async def test_the_workspace_tools_write_list_and_read_files_of_the_task(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("take notes", check="")],
                "act": [
                    calls(("write_file", {"path": "notes/x.md", "content": "X is slow"})),
                    calls(("list_files", {}), ("read_file", {"path": "notes/x.md", "offset": 5})),
                    say("noted"),
                ],
            }
        )
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    listed, read = (await model_ops(store, task.id, "act"))[2].input["messages"][-2:]
    assert listed["content"] == '["notes/x.md"]'
    assert read["content"] == "slow"


async def test_run_shell_is_offered_only_when_the_agent_allows_a_shell(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    entries = {
        "plan": [plan("count files", check="")],
        "act": [calls(("run_shell", {"command": "pwd"})), say("counted")],
    }
    denied = await run_agent(Runtime(store), make_agent(script(entries)))
    # run_shell is an external_action; this agent runs unattended (approvals: tests/engine/test_approvals.py).
    unattended = Constraints(human_in_the_loop=HumanInTheLoop(required_for_risk_levels=[]))
    allowed = await run_agent(
        Runtime(store), make_agent(script(entries), allow_shell=True, constraints=unattended)
    )

    assert denied.status is allowed.status is TaskStatus.COMPLETED
    denied_act, denied_reply = await model_ops(store, denied.id, "act")
    assert "run_shell" not in {t["name"] for t in denied_act.input["tools"]}
    assert "no tool named 'run_shell'" in denied_reply.input["messages"][-1]["content"]
    shell = next(op for op in await store.list_ops(allowed.id) if op.name == "run_shell")
    assert shell.output["exit_code"] == 0
    assert shell.output["output"].strip() == allowed.workspace


def test_the_builtin_tool_names_are_the_names_of_the_builtin_tools(tmp_path: Path, store: StateStore) -> None:
    with_shell = {t.name for t in builtin_tools(tmp_path, store, allow_shell=True)}
    without = {t.name for t in builtin_tools(tmp_path, store, allow_shell=False)}
    assert with_shell == BUILTIN_TOOL_NAMES
    assert with_shell - without == {"run_shell"}


async def test_the_task_records_the_agent_so_any_worker_can_rebuild_it(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    model = script({"plan": [plan("look at X", check="")]})
    agent = make_agent(model, budget=ratchet.Budget(max_steps=5))
    task_id = await Runtime(store).submit(agent, instruction="look at X")

    task = await store.get_task(task_id)
    assert task.model == model and task.agent == "ops" and task.name == "ops"
    assert task.budget.max_steps == 5
    recorded = task.inputs_params["agent"]
    assert isinstance(recorded, dict)
    assert recorded["name"] == "ops" and recorded["instructions"] == INSTRUCTIONS
    assert recorded["tool_sources"] == ["tests.helpers.agent_tools"]
    assert not recorded["allow_shell"]


async def test_tools_from_a_python_file_are_loaded_by_path(
    store: StateStore, script: Callable[[dict[str, Any]], str], tmp_path: Path
) -> None:
    source = tmp_path / "shop_tools.py"
    source.write_text(
        "import ratchet\n\n"
        "@ratchet.tool(risk='read_only')\n"
        "def open_orders(shop: str) -> int:\n"
        '    """How many orders are open."""\n'
        "    return 3\n"
    )
    agent = Agent(
        "shop",
        INSTRUCTIONS,
        model=script(
            {
                "plan": [plan("count orders", check="")],
                "act": [calls(("open_orders", {"shop": "main"})), say("3 open")],
            }
        ),
        tool_sources=[str(source)],
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    op = next(op for op in await store.list_ops(task.id) if op.name == "open_orders")
    assert op.output == 3
    assert isinstance(task.inputs_params["agent"], dict)
    assert task.inputs_params["agent"]["tool_sources"] == [str(source)]


def test_a_tool_no_worker_could_load_is_refused(script: Callable[[dict[str, Any]], str]) -> None:
    """A tool defined inside a function lives at no module's top level: a worker can't find it by its source.

    The Agent refuses it at once (InputError) rather than drop it silently and
    leave the model told "there is no tool named".
    """

    @ratchet.tool(risk="read_only")
    def local_probe(service: str) -> str:
        """Probe a service."""
        return f"{service} ok"

    with pytest.raises(InputError, match="local_probe"):
        make_agent(
            script({"plan": [plan("probe X", check="")], "act": [say("done")]}),
            tools=(agent_tools.check_status, local_probe),
        )


async def test_the_model_is_offered_the_tools_the_agent_was_given_not_their_whole_module(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """`Agent(tools=[check_status])` must not hand the model `deploy`, which shares its module."""
    agent = make_agent(
        script({"plan": [plan("look at X", check="")], "act": [say("looked")]}),
        tools=(agent_tools.check_status,),
    )
    task = await run_agent(Runtime(store), agent)

    (act,) = await model_ops(store, task.id, "act")
    offered = {t["name"] for t in act.input["tools"]}
    assert offered == {
        "check_status",
        "list_files",
        "read_file",
        "write_file",
        "read_artifact",
        "read_state",
        "update_state",
        "ask_user",
        "replan",
        "skip_step",
        "complete_task",
        "fail_task",
    }


async def test_the_plans_inputs_params_cannot_replace_the_recorded_agent(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """The task's inputs_params["agent"] is what a worker rebuilds the agent from (tools, shell)."""
    hijack = {
        "goal": "X is fast",
        "inputs_params": {"service": "X", "agent": {"name": "evil", "allow_shell": True}},
        "steps": [{"step_name": "look at X"}],
    }
    agent = make_agent(script({"plan": [{"content": hijack}], "act": [say("looked")]}))
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.inputs_params["service"] == "X"
    assert task.inputs_params["agent"] == agent.spec.model_dump(mode="json")


async def test_the_working_memory_holds_the_plans_goal_and_the_agents_constraints(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    """AgentState: goal, constraints, budget ... ; a resumed run rebuilds it with the goal."""
    constraints = ratchet.records.Constraints(
        human_in_the_loop=ratchet.records.HumanInTheLoop(required_for_risk_levels=[])
    )
    agent = make_agent(
        script({"plan": [plan("look at X", check="")], "act": [say("looked")]}),
        budget=ratchet.Budget(max_steps=4),
        constraints=constraints,
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    assert task.state.budget.max_steps == 4
    assert task.state.goal == "X is fast again"
    assert task.state.constraints == constraints
