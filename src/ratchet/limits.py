"""The size limits Ratchet holds every task to, their defaults, and the check of an instruction.

Each limit is set where it applies (docs/limits.md lists them):

- an instruction's size: ``Runtime(max_instruction_bytes=...)``; the CLI's
  ``--max-instruction-bytes`` (or ``RATCHET_MAX_INSTRUCTION_BYTES``);
- tool calls in one model answer: ``Agent(max_tool_calls_per_answer=...)``
  (kept in the task's `AgentSpec`); the CLI's ``--max-tool-calls``;
- a tool result kept inline in the journal: ``Budget(max_inline_result_bytes=...)``
  (kept in the task); a larger result is kept once, as an artifact;
- a task's priority: ``Runtime.submit(priority=...)``, ``ratchet submit
  --priority``, from `PRIORITY_MIN` (most urgent) to `PRIORITY_MAX`;
- a count a person or a client gives (steps, tokens): at most `MAX_COUNT`;
- a task's name a person gives (``ratchet run --name``, ``ratchet submit
  --name``): at most `MAX_NAME_CHARS` characters (`check_name`);
- seconds an option or ``ratchet.toml`` gives (a lease, a poll, a grace): at
  most `MAX_SECONDS`; tasks one worker runs at once: at most `MAX_CONCURRENCY`.
- a task's labels (``--label key=value``, ``labels=``): at most `MAX_LABELS`,
  each key and value as `check_labels` says (docs/finding-tasks.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .errors import InputError

__all__ = [
    "MAX_CONCURRENCY",
    "MAX_COUNT",
    "MAX_INLINE_RESULT_BYTES",
    "MAX_INSTRUCTION_BYTES",
    "MAX_LABELS",
    "MAX_LABEL_KEY_CHARS",
    "MAX_LABEL_VALUE_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SECONDS",
    "MAX_TOOL_CALLS_PER_ANSWER",
    "PRIORITY_DEFAULT",
    "PRIORITY_MAX",
    "PRIORITY_MIN",
    "check_code_version",
    "check_instruction",
    "check_labels",
    "check_name",
    "check_text",
    "utf8_problem",
]

MAX_INSTRUCTION_BYTES = 256 * 1024
# A count as the stores keep counts and sequence numbers: a 32-bit integer.
MAX_COUNT = 2**31 - 1
MAX_TOOL_CALLS_PER_ANSWER = 64
MAX_INLINE_RESULT_BYTES = 64 * 1024
# As long as the HTTP API takes a task's name: a label to list and filter by, not a document.
MAX_NAME_CHARS = 512
# Lower fires first, as in Celery's 0-9 and Temporal's priority keys: ten levels are plenty
# to rank work, and few enough for a queue index to serve every level.
PRIORITY_MIN, PRIORITY_DEFAULT, PRIORITY_MAX = 0, 5, 9
# Seconds a setting may give (a lease, a poll interval, a grace period): a day at most.
MAX_SECONDS = 86400.0
MAX_CONCURRENCY = 1000
# Labels are for finding tasks (Temporal's search attributes), each row of them indexed: a
# few short pairs, not a place for data (that is what inputs are for).
MAX_LABELS = 32
MAX_LABEL_KEY_CHARS = 63
MAX_LABEL_VALUE_CHARS = 256
_LABEL_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.\-/]*")


def utf8_problem(text: str) -> str | None:
    """What keeps `text` from being stored as UTF-8, and where (None when nothing does).

    A string read from bytes that were not UTF-8 (``sys.argv`` decodes them
    with ``surrogateescape``) holds lone surrogates in their place: the only
    characters UTF-8 cannot encode.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        what = (
            f"the byte 0x{code - 0xDC00:02x}"
            if 0xDC80 <= code <= 0xDCFF
            else f"a lone surrogate U+{code:04X}"
        )
        return f"{what} at character {error.start + 1}"
    return None


def check_text(text: str, what: str) -> None:
    """Refuse a text a store keeps as text (a task's name, a reason, an answer) holding a NUL character.

    PostgreSQL's text cannot hold U+0000 where SQLite's can: refused on every
    store, such a text is one line of bad input wherever it comes from (the
    CLI, the HTTP API, MCP), never a store's error on one of them.

    Raises:
        InputError: it holds one; the message names it as `what` does.
    """
    if "\x00" in text:
        raise InputError(f"{what} holds a NUL character (\\x00), which cannot be stored; remove it")


def check_instruction(instruction: str, *, limit: int = MAX_INSTRUCTION_BYTES) -> None:
    """Refuse an instruction that is not UTF-8 text or is larger than `limit` bytes of it.

    Raises:
        InputError: it is not, or it is larger.
    """
    problem = utf8_problem(instruction)
    if problem is not None:
        raise InputError(f"the instruction is not valid UTF-8: {problem}; give it as UTF-8 text")
    # Each character is at most 4 bytes: most instructions are measured without encoding them.
    if len(instruction) * 4 <= limit:
        return
    size = len(instruction.encode("utf-8"))
    if size > limit:
        raise InputError(
            f"the instruction is {size} bytes, more than the limit of {limit} bytes; "
            "put the material in a file the agent's tools read, or raise the limit "
            "(--max-instruction-bytes, Runtime(max_instruction_bytes=...))"
        )


def check_name(name: str, what: str) -> None:
    """Refuse a task's name that is blank, longer than `MAX_NAME_CHARS`, or not storable text.

    Raises:
        InputError: it is; the message names it as `what` does (``--name``).
    """
    if not name.strip():
        raise InputError(f"{what} needs a name, e.g. {what} nightly-report")
    if len(name) > MAX_NAME_CHARS:
        raise InputError(f"{what} is {len(name)} characters, more than the limit of {MAX_NAME_CHARS}")
    problem = utf8_problem(name)
    if problem is not None:
        raise InputError(f"{what} is not valid UTF-8: {problem}")
    check_text(name, what)


def check_labels(labels: Mapping[str, str], what: str = "label") -> None:
    """Refuse labels a task may not carry.

    A key starts with an ASCII letter and goes on with letters, digits,
    ``_ . - /`` (``team``, ``app.kubernetes.io/name``), at most
    `MAX_LABEL_KEY_CHARS` of them; a value is 1 to `MAX_LABEL_VALUE_CHARS`
    characters of text with no control character; a task has at most
    `MAX_LABELS`.

    Raises:
        InputError: one is not; the message names it as `what` does (``--label``).
    """
    if not isinstance(labels, Mapping):
        raise InputError(f"{what}: give a mapping of each label's key to its value, e.g. {{'team': 'ops'}}")
    if len(labels) > MAX_LABELS:
        raise InputError(f"{what}: {len(labels)} labels, more than the limit of {MAX_LABELS} a task")
    for key, value in labels.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise InputError(f"{what}: a label's key and value are text, not {type(value).__name__}")
        shown = ascii(key) if len(key) <= 40 else ascii(key[:37]) + "..."
        if len(key) > MAX_LABEL_KEY_CHARS:
            raise InputError(
                f"{what}: the key {shown} is {len(key)} characters, "
                f"more than the limit of {MAX_LABEL_KEY_CHARS}"
            )
        if not _LABEL_KEY.fullmatch(key):
            raise InputError(
                f"{what}: the key {shown} is not a label key; start with a letter, then letters, "
                "digits, _ . - or / (e.g. team, app/env)"
            )
        if not value:
            raise InputError(f"{what}: the label {key} has no value; give {key}=VALUE")
        if len(value) > MAX_LABEL_VALUE_CHARS:
            raise InputError(
                f"{what}: the value of {key} is {len(value)} characters, "
                f"more than the limit of {MAX_LABEL_VALUE_CHARS}"
            )
        if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value) or utf8_problem(value) is not None:
            raise InputError(f"{what}: the value of {key} holds a control character or is not UTF-8 text")


# A code version (`Task.code_version`, ``RATCHET_CODE_VERSION``): a release tag or a commit.
_CODE_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


def check_code_version(text: str, where: str) -> str:
    """`text` if it is a code version (up to 64 letters, digits, ``.``, ``_``, ``+``, ``-``).

    Raises:
        InputError: it is not; the message names `where` it was given.
    """
    if not _CODE_VERSION.fullmatch(text):
        shown = ascii(text) if len(text) <= 40 else ascii(text[:37]) + "..."
        raise InputError(
            f"{where}: {shown} is not a code version; give up to 64 letters, digits, '.', '_', '+' "
            "or '-', starting with a letter or digit (e.g. v1.4.2 or a commit's short hash)"
        )
    return text
