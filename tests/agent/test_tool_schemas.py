"""What the model is shown and held to: tool argument schemas, and the schemas of plans and verdicts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ratchet import Runtime, TaskStatus
from ratchet.agent.output_schemas import PLAN_OUTPUT
from ratchet.store import StateStore

from ..helpers import schema_tools
from ..helpers.ledger import Ledger
from ..helpers.scripts import calls, plan, plan_step, say, verdict
from .support import make_agent, model_ops, run_agent


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_an_argument_out_of_its_annotated_range_is_refused_back_to_the_model(
    store: StateStore, script: Callable[[dict[str, Any]], str], tools_ledger: Ledger
) -> None:
    agent = make_agent(
        script(
            {
                "plan": [plan("pick some")],
                "act": [calls(("pick", {"n": 99})), calls(("pick", {"n": 3})), say("picked 3")],
                "verify": [verdict(True)],
            }
        ),
        tools=(schema_tools.pick,),
    )
    task = await run_agent(Runtime(store), agent)

    assert task.status is TaskStatus.COMPLETED, task.error
    acts = await model_ops(store, task.id, "act")
    shown = {t["name"]: t for t in acts[0].input["tools"]}["pick"]["parameters"]["properties"]["n"]
    assert (shown["minimum"], shown["maximum"]) == (1, 10)
    assert shown["description"] == "how many items, from 1 to 10."
    refused = acts[1].input["messages"][-1]
    assert refused["role"] == "tool" and refused["name"] == "pick"
    assert refused["content"].startswith("error: NonRetryableError: bad arguments for pick: n: ")
    assert "less than or equal to 10" in refused["content"]
    assert acts[2].input["messages"][-1]["content"] == "3"
    # Only the call with n=3 ran.
    assert [tool for tool, _ in tools_ledger.invocations()] == ["pick"]
    assert sum(tools_ledger.invocations().values()) == 1


@pytest.mark.parametrize("store_kind", ["memory", "sqlite"])
async def test_plan_verify_and_replan_requests_ask_for_their_schemas(
    store: StateStore, script: Callable[[dict[str, Any]], str]
) -> None:
    replanned = {
        "plan": [plan("restart X")],
        "act": [say("refused"), say("refused again"), say("rolled back")],
        "verify": [verdict(False), verdict(False), verdict(True)],
        "replan": [{"content": {"steps": [plan_step("roll X back")]}}],
    }
    task = await run_agent(Runtime(store), make_agent(script(replanned)))

    assert task.status is TaskStatus.COMPLETED, task.error
    asked = {
        purpose: {op.input["output_schema"]["name"] for op in await model_ops(store, task.id, purpose)}
        for purpose in ("plan", "verify", "replan")
    }
    assert asked == {"plan": {"plan"}, "verify": {"verdict"}, "replan": {"replan"}}
    (plan_op,) = await model_ops(store, task.id, "plan")
    assert plan_op.input["output_schema"]["json_schema"] == PLAN_OUTPUT.json_schema
    assert all(op.input["output_schema"] is None for op in await model_ops(store, task.id, "act"))
