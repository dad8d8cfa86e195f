"""A disk that fills up on demand, for the tests of a full disk.

Where this process may mount (root, in CI), the directory is a small tmpfs of
its own, and filling it writes a file until the kernel answers ENOSPC: SQLite
then meets a real full disk. Elsewhere the directory stays a plain one, and
filling it caps every SQLite connection of this process on a database in it
at the database's current size (``PRAGMA max_page_count``): SQLite then
reports SQLITE_FULL as it does on a full disk. A test runs the same either
way; `SmallDisk.real` says which.

`fill_disk` and `free_disk` use the standard library only: the tools of a
`ratchet` subprocess import this file from beside them (a copy of it) and
fill the disk from inside that process.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import sqlite3
import subprocess
from pathlib import Path

FILLER = ".filler"
INODE_FILLER = ".inode-"
DEFAULT_MAX_PAGE_COUNT = 1073741823  # SQLite's default for a connection
_CHUNK = 64 * 1024


class SmallDisk:
    """A directory of a few megabytes: a tmpfs mounted on it when this process may mount one."""

    def __init__(self, directory: Path, *, size: str = "8m", inodes: int | None = None) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.real = _mount(directory, size, inodes)

    def fill(self, *, leave: int = 0) -> None:
        fill_disk(self.directory, leave=leave)

    def use_up_inodes(self) -> None:
        """Make empty files until the file system has no inode left: then even ``mkdir`` meets ENOSPC.

        A real disk only (`real`), made with few `inodes`: the page cap of the
        fallback limits SQLite alone.
        """
        assert self.real, "a plain directory has no inodes of its own to use up"
        number = 0
        try:
            while True:
                (self.directory / f"{INODE_FILLER}{number}").touch()
                number += 1
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise

    def free(self) -> None:
        free_disk(self.directory)
        for filler in self.directory.glob(f"{INODE_FILLER}*"):
            filler.unlink()

    def make_read_only(self) -> None:
        """Make the directory read-only: its file system remounted so, or else its modes."""
        if self.real:
            _remount(self.directory, "ro")
            return
        for path in self.directory.iterdir():
            path.chmod(0o444)
        self.directory.chmod(0o555)

    def make_writable(self) -> None:
        if self.real:
            _remount(self.directory, "rw")
            return
        self.directory.chmod(0o755)
        for path in self.directory.iterdir():
            path.chmod(0o644)

    def close(self) -> None:
        if not self.real:
            self.make_writable()  # so that pytest can remove it
        else:
            subprocess.run(["umount", "--lazy", str(self.directory)], check=False, capture_output=True)


def _mount(directory: Path, size: str, inodes: int | None) -> bool:
    if os.geteuid() != 0:
        return False
    options = f"size={size},mode=0777" + (f",nr_inodes={inodes}" if inodes else "")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0  # a container without the right to mount: the page cap it is


def _remount(directory: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(directory)], check=True, capture_output=True)


def fill_disk(directory: Path, *, leave: int = 0) -> None:
    """Use up the space of `directory` but about `leave` bytes."""
    if os.path.ismount(directory):
        _fill_tmpfs(directory / FILLER, leave)
        return
    for conn, page_size, pages in _connections_on(directory):
        conn.execute(f"PRAGMA max_page_count = {pages + leave // page_size}")


def free_disk(directory: Path) -> None:
    """Give `directory` its space back."""
    if os.path.ismount(directory):
        with contextlib.suppress(FileNotFoundError):
            (directory / FILLER).unlink()
        return
    for conn, _, _ in _connections_on(directory):
        conn.execute(f"PRAGMA max_page_count = {DEFAULT_MAX_PAGE_COUNT}")


def _fill_tmpfs(filler: Path, leave: int) -> None:
    with filler.open("ab", buffering=0) as out:
        try:
            while out.write(b"\0" * _CHUNK):
                pass
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
        out.truncate(max(0, filler.stat().st_size - leave))


def _connections_on(directory: Path) -> list[tuple[sqlite3.Connection, int, int]]:
    """Every open SQLite connection of this process on a database file in `directory`."""
    found = []
    root = str(directory.resolve())
    for thing in gc.get_objects():
        if not isinstance(thing, sqlite3.Connection):
            continue
        try:
            files = [row[2] for row in thing.execute("PRAGMA database_list")]
            if any(file and str(Path(file).resolve()).startswith(root + os.sep) for file in files):
                page_size = thing.execute("PRAGMA page_size").fetchone()[0]
                pages = thing.execute("PRAGMA page_count").fetchone()[0]
                found.append((thing, page_size, pages))
        except sqlite3.Error:  # closed
            continue
    return found
