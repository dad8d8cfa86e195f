"""The team: an architect plans modules, coders write them as child tasks, a reviewer checks them.

``team`` is the parent workflow; ``write_module`` is each coder's child task.
Each role calls its own model (``model=``), so the scripted demo gives each
role its own script and a real run may give each a different provider. A
coder writes its module and its test through the ``save_module`` tool, which
records each write in the demo's ledger under the call's idempotency key:
the ledger then tells whether any finished module was written twice. The tool
honours its key: a call run again after a crash (its result was never
journaled) finds its key's effect in the ledger and writes nothing.

This module is package code, so a worker process loads it as trusted code
(``ratchet.demo.team:team``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ..engine import workflow
from ..engine.children import Child
from ..engine.context import Context
from ..records import RiskLevel
from ..tools import ToolContext, tool
from .ledger import LEDGER_ENV, Ledger

__all__ = ["SAVE_SECONDS", "Plan", "Review", "Source", "save_module", "team", "write_module"]

TARGET = "ratchet.demo.team"
SAVE_SECONDS = float(os.environ.get("RATCHET_DEMO_SAVE_SECONDS", "0.6"))


class ModuleSpec(BaseModel):
    """One module the architect planned."""

    name: str
    purpose: str


class Plan(BaseModel):
    """The architect's answer: the modules to write."""

    modules: list[ModuleSpec]


class Source(BaseModel):
    """A coder's answer: the module's code and its test (``{module}`` stands for its name)."""

    code: str
    test: str


class Fix(BaseModel):
    """One fix the reviewer asks of a module's coder."""

    module: str
    request: str


class Review(BaseModel):
    """The reviewer's answer."""

    approved: bool
    summary: str
    fixes: list[Fix] = []


def _ask(text: str) -> dict[str, Any]:
    return {"purpose": "act", "messages": [{"role": "user", "content": text}]}


@tool(risk=RiskLevel.WRITE_LOCAL)
def save_module(directory: str, module: str, code: str, test: str, ctx: ToolContext) -> dict[str, Any]:
    """Write ``MODULE.py`` and ``test_MODULE.py`` into `directory`; record the write in the ledger."""
    ledger = Ledger(os.environ[LEDGER_ENV]) if os.environ.get(LEDGER_ENV) else None
    if ledger is not None:
        done = ledger.effect(ctx.idempotency_key)
        if done is not None:  # this call saved before a crash lost its result: saving again would repeat it
            return done.detail
        ledger.record_invocation("save_module", ctx.task_id, ctx.idempotency_key, ctx.attempt)
    time.sleep(SAVE_SECONDS)  # a write that takes a while: the moment the demo crashes in
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{module}.py").write_text(code, "utf-8")
    (out / f"test_{module}.py").write_text(test, "utf-8")
    detail = {"module": module, "files": [f"{module}.py", f"test_{module}.py"]}
    if ledger is not None:
        ledger.record_effect("save_module", ctx.task_id, ctx.idempotency_key, detail)
    return detail


@workflow(tools=[save_module])
async def write_module(
    ctx: Context, module: str, purpose: str, coder: str, directory: str, fix: str | None = None
) -> dict[str, Any]:
    """A coder's child task: ask the coder's model for the module and its test, then save them."""
    text = f"Write the Python module {module!r} ({purpose}) and a pytest test for it."
    if fix:
        text += f" The reviewer asks: {fix}"
    source = await ctx.call_model(_ask(text), schema=Source, model=coder)
    code = source.code.replace("{module}", module)
    if fix:
        code = f"# Review fix: {fix}\n{code}"
    saved = await ctx.call_tool(
        "save_module",
        {
            "directory": directory,
            "module": module,
            "code": code,
            "test": source.test.replace("{module}", module),
        },
    )
    assert isinstance(saved, dict)
    return {"module": module, "files": saved["files"], "fixed": bool(fix)}


@workflow
async def team(
    ctx: Context,
    goal: str,
    architect: str,
    coder: str,
    reviewer: str,
    directory: str | None = None,
    max_concurrency: int = 2,
) -> dict[str, Any]:
    """Plan, write each module in a child task (at most `max_concurrency` at once), review, fix.

    Returns the modules written and the review. Files go to `directory`, or
    to the task's workspace when it is not given.
    """
    out = directory or str(ctx.workspace or Path.cwd())
    plan = await ctx.call_model(
        _ask(f"Plan the Python modules for: {goal}. Answer with each module's name and purpose."),
        schema=Plan,
        model=architect,
    )
    coders = [
        Child(
            f"{TARGET}:write_module",
            {"module": m.name, "purpose": m.purpose, "coder": coder, "directory": out},
            name=f"code {m.name}",
        )
        for m in plan.modules
    ]
    written = await ctx.run_children(coders, max_concurrency=max_concurrency)
    sources = {m.name: (Path(out) / f"{m.name}.py").read_text("utf-8") for m in plan.modules}
    listing = "\n\n".join(f"# {name}.py\n{code}" for name, code in sources.items())
    review = await ctx.call_model(
        _ask(f"Review these modules for: {goal}. Ask a fix of any that needs one.\n\n{listing}"),
        schema=Review,
        model=reviewer,
    )
    purposes = {m.name: m.purpose for m in plan.modules}
    fixes = [f for f in review.fixes if f.module in purposes]
    if fixes:  # a fix is a new child task for that module's coder, with the reviewer's request
        await ctx.run_children(
            [
                Child(
                    f"{TARGET}:write_module",
                    {
                        "module": f.module,
                        "purpose": purposes[f.module],
                        "coder": coder,
                        "directory": out,
                        "fix": f.request,
                    },
                    name=f"fix {f.module}",
                )
                for f in fixes
            ],
            max_concurrency=max_concurrency,
        )
    return {
        "directory": out,
        "modules": [w["module"] for w in written if isinstance(w, dict)],
        "review": review.model_dump(),
    }
