"""Where a task's files live: ``$RATCHET_HOME/workspaces/<task id>``, and nowhere else.

It sits below the engine and the agent because both ends need it: whoever
creates a task names its directory (the runtime, or a worker firing a
schedule), and the agent works in it.

The directory a task records is data in the store, and the agent is confined
to it and deletes it when the task succeeds; so a worker uses a recorded
directory only if it lies under its own workspace root (`confined_workspace`).

What an agent writes there is never code. ``RATCHET_HOME`` defaults to a
per-user state directory, outside any project (whose files are code a
worker may import), and every workspace root gets a marker file,
`WORKSPACES_MARKER`, when it is made: `ratchet.trust.code` refuses any file
below a directory holding one, whatever ``RATCHET_HOME`` the checking process
has, even when a root was configured inside the project.

A write there that a full disk refuses (`writing_in`) stops the task
resumable, as a full disk under the store does: it is no fault of the task.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..errors import WorkspaceFull, WorkspaceRefused

__all__ = [
    "HOME_ENV",
    "LEGACY_WORKSPACES",
    "WORKSPACES_MARKER",
    "confined_workspace",
    "make_workspace",
    "ratchet_home",
    "workspace_for",
    "workspace_root",
    "writing_in",
]

HOME_ENV = "RATCHET_HOME"
WORKSPACES_MARKER = ".ratchet-workspaces"
LEGACY_WORKSPACES = Path(".ratchet", "workspaces")
"""Where workspaces were kept before they left the project: under the project root."""

_MARKER_TEXT = (
    "This directory holds Ratchet task workspaces: files agents write.\n"
    "Ratchet never loads code from below it (tool sources, workflows, modules).\n"
)


def ratchet_home() -> Path:
    """``$RATCHET_HOME``, else ``$XDG_STATE_HOME/ratchet`` (``~/.local/state/ratchet``); not resolved.

    Raises:
        WorkspaceRefused: neither is set and this user has no home directory.
    """
    given = os.environ.get(HOME_ENV, "")
    if given:
        return Path(given)
    state = os.environ.get("XDG_STATE_HOME", "")
    if state and Path(state).is_absolute():  # the XDG rule: a relative value is ignored
        return Path(state) / "ratchet"
    try:
        return Path.home() / ".local" / "state" / "ratchet"
    except RuntimeError:
        raise WorkspaceRefused(
            f"no home directory to keep task workspaces in; set {HOME_ENV} to a directory outside the project"
        ) from None


def workspace_root() -> Path:
    """``$RATCHET_HOME/workspaces``, absolute, links resolved: every task's directory is below it.

    Raises:
        WorkspaceRefused: there is no ``RATCHET_HOME`` (see `ratchet_home`).
    """
    return (ratchet_home() / "workspaces").resolve()


def workspace_for(task_id: str) -> Path:
    """``$RATCHET_HOME/workspaces/<task id>``, absolute (see `ratchet_home` for the default home)."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", task_id).lstrip(".") or "task"
    if safe != task_id:  # two ids that clean up alike must not share a directory
        safe += "-" + hashlib.sha1(task_id.encode()).hexdigest()[:8]
    return workspace_root() / safe


def confined_workspace(task_id: str, recorded: str | None) -> Path:
    """The directory task `task_id` may work in, given the one it recorded.

    A recorded directory below the workspace root (after resolving links and
    ``..``; a relative one is taken from the root) is used as it is. One that
    is this task's own directory under another root (the project moved, or
    the task was made with another RATCHET_HOME) becomes its directory under
    this root: the old one is never touched. So does a task made before
    workspaces left the project (``<project>/.ratchet/workspaces/<id>``): it
    goes on in an empty directory under this root. Nothing recorded: its own.

    Raises:
        WorkspaceRefused: the recorded directory is anything else (the root
            itself, or a directory outside it); it is neither used nor deleted.
    """
    own = workspace_for(task_id)
    if recorded is None:
        return own
    root = workspace_root()
    path = (root / recorded).resolve()  # an absolute `recorded` replaces the root
    if path != root and path.is_relative_to(root):
        return path
    given = Path(recorded)
    if given.is_absolute() and given.name == own.name and given.parent.name == "workspaces":
        return own
    raise WorkspaceRefused(
        f"the task's workspace {recorded} is not under the workspace root {root}; "
        "it is neither used nor deleted"
    )


def make_workspace(path: Path) -> Path:
    """Make task directory `path` (one `confined_workspace` gave), marking its root first; return it.

    The marker is written before the task's directory exists, so nothing an
    agent writes ever lies in an unmarked root.
    """
    root = workspace_root()
    root.mkdir(parents=True, exist_ok=True)
    marker = root / WORKSPACES_MARKER
    if not marker.is_file():
        marker.write_text(_MARKER_TEXT, encoding="utf-8")
    path.mkdir(parents=True, exist_ok=True)
    return path


# What a file system answers when it has no room left: no block or inode free, or over a quota.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


@contextlib.contextmanager
def writing_in(workspace: Path) -> Iterator[None]:
    """Write in `workspace` within the block; a full disk then raises `WorkspaceFull`, not `OSError`.

    Raises:
        WorkspaceFull: the disk (or the quota) under `workspace` has no room left.
    """
    try:
        yield
    except OSError as error:
        if error.errno not in _FULL:
            raise
        raise WorkspaceFull(
            f"no room left on the disk of the task's workspace {workspace} ({error.strerror}); "
            "free space there, then resume the task"
        ) from None
