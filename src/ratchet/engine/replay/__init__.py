"""Replaying a task's stored journal against the code installed now, touching nothing: `replay_check_task`.

A check runs the task's workflow over a copy of its journal held in memory:
every recorded call returns its recorded result, and the first call the
journal does not hold ends the check there (nothing runs live: no model
call, no tool call, no write to the task's store). It reports the first
divergence, if any: where the code now asks for another call than the one
recorded (docs/changing-code.md).
"""

from .check import replay_check_task
from .outcome import Divergence, ReplayOutcome

__all__ = ["Divergence", "ReplayOutcome", "replay_check_task"]
