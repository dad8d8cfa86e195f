"""What a step's prompt says of the whole plan: every step's status, and what the earlier steps found.

A step's report is its act turns' last answer, a journaled model answer, so
a resumed task rebuilds the same reports (and the same prompts) by replay.
The reports share the context budget with the state slice: they take at
most half of ``max_artifact_bytes_in_context``, newest first. A report
longer than an eighth of it is kept as an artifact when its step ends, and
the prompt carries its beginning and the artifact's id; reports that no
longer fit are counted, not shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..records import Step, StepStatus
from . import prompts

__all__ = ["SUMMARY_CHARS", "Report", "findings_text", "long_report", "plan_overview", "report_share"]

# The beginning of a long report the prompt carries, with its artifact's id.
SUMMARY_CHARS = 200


@dataclass(frozen=True)
class Report:
    """What one ended step found: its report, and the artifact that keeps it whole if it is long."""

    text: str
    artifact_id: str | None = None


def report_share(max_bytes: int) -> int:
    """The bytes of the context budget the earlier steps' reports may take."""
    return max_bytes // 2


def long_report(text: str, max_bytes: int) -> bool:
    """Whether a report is kept as an artifact (and summarized in prompts) rather than carried whole."""
    return len(text.encode("utf-8")) > max_bytes // 8


def plan_overview(steps: list[Step]) -> str:
    """Every step of the plan, numbered, with its status (and why a step failed or was skipped)."""
    lines = []
    for step in steps:
        line = prompts.step_line(step)
        if step.failure_message and step.status in (
            StepStatus.FAILED,
            StepStatus.SKIPPED,
            StepStatus.CANCELLED,
        ):
            line += f": {step.failure_message}"
        lines.append(line)
    return "\n".join(lines)


def findings_text(steps: list[Step], reports: dict[int, Report], max_bytes: int) -> str:
    """The earlier steps' reports, newest first, in at most `max_bytes` (UTF-8); "" when there are none."""
    by_index = {s.index: s for s in steps}
    lines: list[str] = []
    # The heading and the note on reports left out count against the budget too.
    used, left_out = len(_HEADING.encode("utf-8")) + _NOTE_BYTES, 0
    if used > max_bytes:
        return ""
    for index in sorted(reports, reverse=True):
        step, report = by_index.get(index), reports[index]
        if step is None:
            continue
        head = f"- step {index + 1} ({step.name}, {step.status}): "
        where = (
            f" [the whole report is artifact {report.artifact_id}; read it with read_artifact]"
            if report.artifact_id
            else " [cut short]"
        )
        summary = f"{head}{report.text[:SUMMARY_CHARS]}...{where}".replace("\n", " ")
        candidates = [summary] if report.artifact_id else [head + report.text, summary]
        line = next((c for c in candidates if used + len(c.encode("utf-8")) + 1 <= max_bytes), None)
        if line is None or left_out:  # once one is left out, so are the older ones
            left_out += 1
            continue
        lines.append(line)
        used += len(line.encode("utf-8")) + 1
    if left_out:
        lines.append(f"({left_out} older reports left out for space)")
    return _HEADING + "".join(line + "\n" for line in lines) if lines else ""


_HEADING = "What the earlier steps found (newest first):\n"
_NOTE_BYTES = 48
