"""Who holds a lease, and whether a holder on this host is gone.

A lease records the process that holds it: its host name and pid, and, on
Linux, the PID space that pid counts in (the machine's boot id and the PID
namespace) and when the process started (clock ticks since boot, field 22 of
``/proc/<pid>/stat``). A pid alone names a process only within one PID
namespace and only until it is reused; with those two it names one process
for good. A worker judges only holders it can see: same host name and same
PID space. Where ``/proc`` says nothing (other systems) both are empty, and
the host name alone stands for the PID space: there, processes that share a
host name must share their pids' namespace.
"""

from __future__ import annotations

import functools
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from ...records import Lease

__all__ = ["WorkerIdentity", "holder_is_gone", "pid_space_here"]


@functools.cache
def pid_space_here() -> str:
    """The PID space of this process: its machine's boot and its PID namespace ("" where unknown)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace}"


@dataclass(frozen=True)
class WorkerIdentity:
    """Who holds a lease: a name, and the host and process behind it."""

    name: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    @property
    def pid_space(self) -> str:
        """The PID space `pid` counts in: this process's (`pid_space_here`)."""
        return pid_space_here()

    @functools.cached_property
    def pid_started(self) -> int:
        """When process `pid` started, as this host's ``/proc`` says (0: unknown)."""
        return _stat(self.pid)[1]


def holder_is_gone(lease: Lease) -> bool:
    """Whether the lease's holder was a process this one can see that no longer exists.

    It can see a holder of the same host name and PID space. The holder is
    gone when its pid names no process, names one that started at another
    time than the holder (the pid was reused), or names a zombie (killed,
    not yet reaped by its parent). A pid that cannot be looked at counts as
    alive.
    """
    if lease.host != socket.gethostname() or lease.pid_space != pid_space_here():
        return False
    if lease.pid <= 0 or lease.pid == os.getpid():
        return False
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # it exists, under another user
        pass
    state, started = _stat(lease.pid)
    if state == "Z":
        return True
    # Its pid now names a process that started later: the holder's ended, and the pid was given again.
    return bool(lease.pid_started and started) and started != lease.pid_started


def _stat(pid: int) -> tuple[str, int]:
    """The state letter and the start time of process `pid` ("" and 0 if it cannot be read)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "", 0
    # Fields counted after the command name, which may hold spaces and parentheses: field 3 is
    # the state, field 22 the start time.
    fields = stat.rpartition(")")[2].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return "", 0
