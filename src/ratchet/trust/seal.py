"""The seal on a task's code references: an HMAC made with a key the database does not hold.

A task's row names what a worker will run or launch: its workflow, its model,
its workspace, and the inputs its workflow reads code from (an agent's tool
sources, compaction and MCP server command lines; a chat's tools). Anyone who
can write the database can change that row. So the process that creates a
task seals those fields with a key of its own, and a worker runs a task only
if the seal still matches them (`SigningKey.check`): a row a database writer
made or changed waits as ``waiting(code)`` instead of running.

The key comes from ``RATCHET_SIGNING_KEY`` (the key itself), else the file
``RATCHET_SIGNING_KEY_FILE`` names, else ``$XDG_CONFIG_HOME/ratchet/signing-key``
(``~/.config/ratchet/signing-key``), made with 32 random bytes the first time
a process needs it. Every process that creates or runs tasks of one store
must hold the same key; the database never does.

A seal reads ``v1:<input keys>:<mac>``. The keys are the inputs it covers
(the workflow's `code_inputs` when it was made), so a worker checks exactly
what was sealed, then that its workflow reads code from no input the seal
leaves out. The MAC covers the task's id too: a seal copied onto another row
does not hold there. A copy of a task (a fork, a retry, a schedule's next
task) is sealed again by a process holding the key, and only if the
original's seal holds (`SigningKey.reseal`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodeUnsealed, InputError
from ..records import Task

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "SigningKey",
    "covered_inputs",
    "default_key_file",
    "sealed_inputs",
]

KEY_ENV = "RATCHET_SIGNING_KEY"
KEY_FILE_ENV = "RATCHET_SIGNING_KEY_FILE"
MIN_KEY_CHARACTERS = 32
_VERSION = "v1"


def default_key_file() -> Path:
    """``$XDG_CONFIG_HOME/ratchet/signing-key``, or ``~/.config/ratchet/signing-key``."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config).expanduser() / "ratchet" / "signing-key"


@dataclass(frozen=True)
class SigningKey:
    """The key that seals and checks tasks' code references, and where it came from.

    Args:
        secret: the key's bytes.
        where: where it came from, for messages (never the key itself).
    """

    secret: bytes
    where: str

    def __repr__(self) -> str:  # a key must not reach a log by accident
        return f"SigningKey(where={self.where!r})"

    @classmethod
    def from_environment(cls) -> SigningKey:
        """This process's key: ``RATCHET_SIGNING_KEY``, its file, or the default file (made if absent).

        Raises:
            InputError: the key given is too short, or its file cannot be read or made.
        """
        given = os.environ.get(KEY_ENV)
        if given:  # set and empty: as unset, as for the other variables
            return cls(_checked(given.strip(), KEY_ENV), KEY_ENV)
        named = os.environ.get(KEY_FILE_ENV)
        if named:
            path = Path(named).expanduser()
            return cls(_checked(_read(path), f"{KEY_FILE_ENV}={path}"), str(path))
        path = default_key_file()
        return cls(_checked(_read_or_make(path), str(path)), str(path))

    def seal(self, task: Task, code_inputs: Iterable[str]) -> Task:
        """`task` with a seal over its code references and the inputs named `code_inputs`."""
        keys = tuple(sorted(set(code_inputs)))
        for key in keys:
            if not key or "," in key or ":" in key:
                raise InputError(f"code input {key!r}: give a name without ',' or ':'")
        return task.model_copy(update={"seal": f"{_VERSION}:{','.join(keys)}:{self._mac(task, keys)}"})

    def check(self, task: Task) -> tuple[str, ...]:
        """The inputs `task`'s seal covers, once it holds for the task as it stands.

        Raises:
            CodeUnsealed: the task has no seal, or its code references are not
                what this key sealed (changed in the database, or sealed with
                another key).
        """
        if not task.seal:
            raise CodeUnsealed(
                f"task {task.id} carries no seal on its code references (made by a Ratchet before "
                "seals, or written into the database directly)"
            )
        version, _, rest = task.seal.partition(":")
        listed, _, mac = rest.rpartition(":")
        keys = tuple(k for k in listed.split(",") if k)
        if version != _VERSION or not hmac.compare_digest(mac, self._mac(task, keys)):
            raise CodeUnsealed(
                f"task {task.id}: its code references do not match their seal (changed in the "
                f"database, or sealed with another key than this process's, from {self.where})"
            )
        return keys

    def reseal(self, original: Task, copy: Task) -> Task:
        """`copy` sealed over the inputs `original`'s seal covers, if that seal holds; else unsealed.

        A copy of a task whose seal does not hold carries none, so it waits
        for an operator as its original would.
        """
        try:
            keys = self.check(original)
        except CodeUnsealed:
            return copy.model_copy(update={"seal": None})
        return self.seal(copy, keys)

    def _mac(self, task: Task, keys: tuple[str, ...]) -> str:
        inputs = {key: task.inputs_params[key] for key in keys if key in task.inputs_params}
        sealed = {
            "id": task.id,
            "workflow": task.workflow,
            "model": task.model,
            "workspace": task.workspace,
            "keys": list(keys),
            "inputs": inputs,
        }
        if task.fallback_models:  # only then: the seals made before fallbacks still hold
            sealed["fallback_models"] = list(task.fallback_models)
        # Canonical JSON: a store may give the same values back with its keys in another order.
        text = json.dumps(sealed, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        digest = hmac.new(self.secret, text.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def covered_inputs(task: Task) -> frozenset[str]:
    """The inputs `task`'s seal says it covers, read from the seal without checking it (none: no seal).

    What a copy of the task (a fork with changed inputs) must keep as they
    are, for the seal made again over them to say the same.
    """
    if not task.seal:
        return frozenset()
    _, _, rest = task.seal.partition(":")
    listed, _, _ = rest.rpartition(":")
    return frozenset(key for key in listed.split(",") if key)


def sealed_inputs(code_inputs: Iterable[str], covered: Iterable[str], reference: str) -> None:
    """Check that a seal covers every input workflow `reference` reads code from.

    Raises:
        CodeUnsealed: one of `code_inputs` is not among `covered` (sealed by a
            Ratchet whose workflow read no code from it).
    """
    missing = sorted(set(code_inputs) - set(covered))
    if missing:
        raise CodeUnsealed(
            f"the seal of this task does not cover its input {missing[0]!r}, which {reference} "
            "reads code from (sealed by a Ratchet whose workflow did not)"
        )


def _checked(text: str, where: str) -> bytes:
    if len(text) < MIN_KEY_CHARACTERS:
        raise InputError(
            f"the signing key from {where} is {len(text)} characters; give at least "
            f"{MIN_KEY_CHARACTERS} (e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`)"
        )
    return text.encode()


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise InputError(f"{KEY_FILE_ENV}: no signing key file at {path}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read the signing key file {path}: {error}") from None


def _read_or_make(path: Path) -> str:
    """The key in `path`; made (32 random bytes, hex, mode 0600) when there is none.

    Two processes making it at once agree: each writes its own temporary file
    and links it into place, which only the first link does; the other reads
    the winner's key.
    """
    if path.is_file():
        return _read(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secrets.token_hex(32) + "\n")
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process made it first: its key is the key
        finally:
            draft.unlink()
    except OSError as error:
        raise InputError(
            f"cannot make the signing key file {path}: {error}; set {KEY_FILE_ENV} to a file holding "
            f"a key of {MIN_KEY_CHARACTERS} characters or more"
        ) from None
    return _read(path)
