"""The HTML report of `ratchet eval`: what a model or the store wrote is text in it, never markup."""

from __future__ import annotations

from ratchet.cli.eval_html import eval_html
from ratchet.runtime.evals import EvalReport, EvalRun, EvalToolCall, EvalTotals, TaskEval, Verdict

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_what_models_and_tools_wrote_is_escaped() -> None:
    run = EvalRun(
        task_id='t-"1"',
        model="scripted:new.json",
        status="completed",
        result={"answer": HOSTILE},
        tool_calls=[EvalToolCall(name="say", arguments={"text": HOSTILE})],
    )
    task = TaskEval(
        task_id='t-"1"',
        name=HOSTILE,
        verdict=Verdict.DIFF,
        score=0,
        differences=[HOSTILE],
        recorded=run,
        candidate=run,
    )
    page = eval_html(EvalReport(model=HOSTILE, scorer="exact", tasks=[task], totals=EvalTotals.of([task])))

    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert 'id="task-t-&quot;1&quot;"' in page
    assert page.count("<section") == 3  # the totals, the table, the one task
