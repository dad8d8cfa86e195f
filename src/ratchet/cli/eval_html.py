"""`ratchet eval --html FILE`: the report as one self-contained HTML page.

Everything is in the one file (its style inline, no script, no font or image
to fetch), so it opens from a CI artifact or a mail attachment as it is.
Every value from the store or a model is escaped: a task's answer is data,
never markup.
"""

from __future__ import annotations

import json
from html import escape

from pydantic import JsonValue

from ..runtime.evals import EvalReport, EvalRun, EvalTotals, TaskEval, Verdict
from .render import dollars

__all__ = ["eval_html"]

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em; color: #1d1d1f; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #d0d0d5; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f6; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.match { color: #176c2b; font-weight: 600; } .diff { color: #b3261e; font-weight: 600; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
section.task { border-top: 1px solid #d0d0d5; padding-top: 0.5em; }
ul.differences li { color: #b3261e; }
"""

_COLUMNS = ("task", "verdict", "what differs", "tokens", "cost", "latency")


def eval_html(report: EvalReport) -> str:
    """The whole page: the totals, a table of the tasks, then each task's runs side by side."""
    title = f"Eval of {report.model}"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f"<p>Scorer: <code>{escape(report.scorer)}</code>; tool calls served from the recording.</p>\n"
        f"{_totals(report.totals)}\n"
        f"{_summary(report.tasks)}\n" + "\n".join(_task(task) for task in report.tasks) + "\n</body></html>\n"
    )


def _totals(totals: EvalTotals) -> str:
    rows = [
        ("tokens", str(totals.candidate_tokens), str(totals.recorded_tokens)),
        ("cost", dollars(totals.candidate_cost), dollars(totals.recorded_cost)),
        ("latency (model calls)", _seconds(totals.candidate_latency), _seconds(totals.recorded_latency)),
    ]
    body = "".join(
        f'<tr><th>{name}</th><td class="num">{new}</td><td class="num">{old}</td></tr>'
        for name, new, old in rows
    )
    return (
        f'<section id="totals"><h2>Totals</h2>'
        f'<p><span class="match">{totals.matches} match</span>, '
        f'<span class="diff">{totals.diffs} differ</span>, of {totals.tasks} task(s).</p>'
        f"<table><tr><th></th><th>new</th><th>recorded</th></tr>{body}</table></section>"
    )


def _summary(tasks: list[TaskEval]) -> str:
    head = "<tr>" + "".join(f"<th>{name}</th>" for name in _COLUMNS) + "</tr>"
    rows = "".join(
        f'<tr><td><a href="#{escape(_anchor(t))}">{escape(t.task_id)}</a></td>'
        f"<td>{_verdict(t)}</td><td>{escape('; '.join(t.differences) or '-')}</td>"
        f'<td class="num">{t.candidate.tokens} / {t.recorded.tokens}</td>'
        f'<td class="num">{dollars(t.candidate.cost)} / {dollars(t.recorded.cost)}</td>'
        f'<td class="num">{_seconds(t.candidate.latency)} / {_seconds(t.recorded.latency)}</td></tr>'
        for t in tasks
    )
    return f'<section id="tasks"><h2>Tasks (new / recorded)</h2><table>{head}{rows}</table></section>'


def _task(task: TaskEval) -> str:
    differences = "".join(f"<li>{escape(line)}</li>" for line in task.differences)
    listed = f'<ul class="differences">{differences}</ul>' if differences else "<p>No difference.</p>"
    return (
        f'<section class="task" id="{escape(_anchor(task))}">'
        f"<h2>{escape(task.task_id)} ({escape(task.name)}): {_verdict(task)}</h2>{listed}"
        "<table><tr><th></th><th>recorded</th><th>new</th></tr>"
        f"<tr><th>model</th><td>{escape(task.recorded.model or '-')}</td>"
        f"<td>{escape(task.candidate.model or '-')}</td></tr>"
        f"<tr><th>ending</th><td>{_ending(task.recorded)}</td><td>{_ending(task.candidate)}</td></tr>"
        f"<tr><th>tool calls</th><td>{_calls(task.recorded)}</td><td>{_calls(task.candidate)}</td></tr>"
        f"<tr><th>final answer</th><td>{_json(task.recorded.result)}</td>"
        f"<td>{_json(task.candidate.result)}</td></tr>"
        "</table></section>"
    )


def _verdict(task: TaskEval) -> str:
    kind = "match" if task.verdict is Verdict.MATCH else "diff"
    return f'<span class="{kind}">{task.verdict.value}</span>'


def _ending(run: EvalRun) -> str:
    said = run.stopped or run.error
    return escape(run.status + (f": {said}" if said else ""))


def _calls(run: EvalRun) -> str:
    if not run.tool_calls:
        return "none"
    return (
        "<ol>"
        + "".join(f"<li><code>{escape(call.described())}</code></li>" for call in run.tool_calls)
        + "</ol>"
    )


def _json(value: JsonValue) -> str:
    return f"<pre>{escape(json.dumps(value, indent=2, sort_keys=True, default=str))}</pre>"


def _anchor(task: TaskEval) -> str:
    return "task-" + task.task_id


def _seconds(value: float) -> str:
    """A latency as people read it: ``12 ms``, ``3.40 s``."""
    return f"{value:.2f} s" if value >= 1 else f"{value * 1000:.0f} ms"
