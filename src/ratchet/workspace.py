"""Where a task's files live: ``$RATCHET_HOME/workspaces/<task id>``.

It sits below the engine and the agent because both ends need it: whoever
creates a task names its directory (the runtime, or a worker firing a
schedule), and the agent works in it.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["DEFAULT_HOME", "HOME_ENV", "ratchet_home", "workspace_for"]

HOME_ENV = "RATCHET_HOME"
DEFAULT_HOME = ".ratchet"


def ratchet_home() -> Path:
    """``$RATCHET_HOME``, or ``./.ratchet`` when it is not set (not resolved)."""
    return Path(os.environ.get(HOME_ENV, DEFAULT_HOME))


def workspace_for(task_id: str) -> Path:
    """``$RATCHET_HOME/workspaces/<task id>`` (RATCHET_HOME defaults to ./.ratchet), absolute."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", task_id).lstrip(".") or "task"
    if safe != task_id:  # two ids that clean up alike must not share a directory
        safe += "-" + hashlib.sha1(task_id.encode()).hexdigest()[:8]
    return (ratchet_home() / "workspaces" / safe).resolve()
