"""`Runtime.eval` on PostgreSQL: the typed report, no tool run, and not one row of the store changed.

The tasks are recorded for real (`ratchet run`, tests/helpers/eval_recordings.py);
the eval runs here, in this process, as a program calls it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ratchet
from ratchet.errors import InputError
from ratchet.runtime.evals import EvalReport, Verdict

from ..helpers.eval_recordings import NEW_MODEL, appended, record, write_files
from ..helpers.raw_sql import run_sql


def every_row(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Each table of the store's schema: how many rows, and a digest of them all."""
    tables = [name for (name,) in run_sql(url, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
    return {
        table: run_sql(
            url,
            f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t",
        )
        for table in sorted(tables)
    }


async def test_eval_on_postgresql_reads_the_store_and_writes_nothing(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_files(tmp_path)
    same, changed = record(tmp_path, postgres_url, same=1, changed=1)
    monkeypatch.chdir(tmp_path)  # the project root the tasks were recorded in: their tools and scripts
    lines, rows = appended(tmp_path), every_row(postgres_url)

    async with ratchet.Runtime(postgres_url) as rt:
        report = await rt.eval(NEW_MODEL)
        labelled = await rt.eval(NEW_MODEL, scorer="json-diff", labels={"kind": "same"})
        with pytest.raises(InputError, match="no task matches"):
            await rt.eval(NEW_MODEL, status="failed")
        with pytest.raises(InputError, match="names no model"):
            await rt.eval("scripted:")

    assert isinstance(report, EvalReport)
    assert [(t.task_id, t.verdict) for t in report.tasks] == [(same, Verdict.MATCH), (changed, Verdict.DIFF)]
    assert report.tasks[1].differences == ["tool call not in the recording: append(line='two')"]
    assert [c.described() for c in report.tasks[1].recorded.tool_calls] == [
        "append(line='one')",
        "append(line='TWO')",
    ]
    assert (report.totals.matches, report.totals.diffs) == (1, 1)
    assert [(t.task_id, t.verdict) for t in labelled.tasks] == [(same, Verdict.MATCH)]
    assert appended(tmp_path) == lines
    assert every_row(postgres_url) == rows
