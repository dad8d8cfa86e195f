"""The error hierarchy: default messages, the tree in the docstring, LeaseLost and Interrupted apart."""

from __future__ import annotations

import inspect
import re

import pytest

from ratchet import errors
from ratchet.errors import Interrupted, LeaseLost, RatchetError

ERRORS: list[type[BaseException]] = [getattr(errors, name) for name in errors.__all__]
# Not errors a caller handles: the end of the program (a Ctrl-C), and a lost lease, which stops a worker.
APART = {"LeaseLost": "BaseException", "Interrupted": "SystemExit"}
RATCHET_ERRORS = [cls for cls in ERRORS if cls.__name__ not in APART]

# Errors that name what was not found (or what is too new, or missing) and so need arguments.
WITH_ARGUMENTS: dict[type[BaseException], tuple[tuple[object, ...], dict[str, object]]] = {
    errors.TaskNotFound: (("t9",), {"task_id": "t9"}),
    errors.StepNotFound: (("t9", 4), {"task_id": "t9", "index": 4}),
    errors.SessionNotFound: (("s9",), {"session_id": "s9"}),
    errors.ArtifactNotFound: (("a9",), {"artifact_id": "a9"}),
    errors.SchemaTooNew: ((7, 3), {"found": 7, "supported": 3}),
    errors.CorruptRecord: (
        ("task t9", "tasks", ("t9",), "state.plan: Input should be a valid list"),
        {"what": "task t9", "problem": "state.plan: Input should be a valid list"},
    ),
    errors.MissingExtra: (
        ("the anthropic: provider", "the Anthropic SDK", "anthropic"),
        {"feature": "the anthropic: provider", "library": "the Anthropic SDK", "extra": "anthropic"},
    ),
    errors.NonDeterminismError: (
        ("t9", 12, "charge_card", "send_email"),
        {"task_id": "t9", "seq": 12, "recorded": "charge_card", "requested": "send_email"},
    ),
    errors.OperationFailed: (
        ("charge_card", 12, "TimeoutError", "no answer"),
        {"name": "charge_card", "seq": 12, "error_type": "TimeoutError", "error": "no answer"},
    ),
}


def _needs_arguments(cls: type[BaseException]) -> bool:
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return any(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters)


def _first_doc_line(cls: type) -> str:
    return inspect.cleandoc(cls.__doc__ or "").splitlines()[0]


def test_the_argument_list_is_complete() -> None:
    assert {cls for cls in ERRORS if _needs_arguments(cls)} == set(WITH_ARGUMENTS)


@pytest.mark.parametrize(
    "cls", [cls for cls in RATCHET_ERRORS if cls not in WITH_ARGUMENTS], ids=lambda cls: cls.__name__
)
def test_default_message_is_the_docstring_first_line(cls: type) -> None:
    error = cls()
    assert str(error) == error.message == _first_doc_line(cls)


@pytest.mark.parametrize("cls", list(WITH_ARGUMENTS), ids=lambda cls: cls.__name__)
def test_errors_with_arguments_name_them(cls: type) -> None:
    args, attributes = WITH_ARGUMENTS[cls]
    error = cls(*args)
    for name, value in attributes.items():
        assert getattr(error, name) == value
        assert str(value) in error.message
    assert str(error) == error.message


def test_a_given_message_replaces_the_default() -> None:
    assert errors.ConflictError("session s1 changed").message == "session s1 changed"
    assert LeaseLost("worker w1 lost t1").message == "worker w1 lost t1"


def test_lease_lost_is_a_base_exception_only() -> None:
    assert issubclass(LeaseLost, BaseException)
    assert not issubclass(LeaseLost, Exception)
    assert not issubclass(LeaseLost, RatchetError)
    with pytest.raises(LeaseLost):
        try:
            raise LeaseLost
        except Exception:  # user code like this must not swallow it
            pytest.fail("except Exception caught LeaseLost")


def test_interrupted_ends_the_program_as_sys_exit_does_and_passes_except_exception() -> None:
    assert issubclass(Interrupted, SystemExit)
    with pytest.raises(SystemExit) as ended:
        try:
            raise Interrupted(130)
        except Exception:  # a command's own handler must not swallow a Ctrl-C
            pytest.fail("except Exception caught Interrupted")
    assert ended.value.code == 130


@pytest.mark.parametrize("cls", RATCHET_ERRORS, ids=lambda c: c.__name__)
def test_every_other_error_is_a_ratchet_error(cls: type) -> None:
    assert issubclass(cls, RatchetError)
    assert issubclass(cls, Exception)


def test_the_docstring_tree_matches_the_classes() -> None:
    """Each name in the module docstring's tree derives directly from the name above it."""
    parents: dict[int, str] = {}
    drawn: dict[str, str | None] = {}
    for line in (errors.__doc__ or "").splitlines():
        match = re.match(r"^(\s*)(?:[│ ]*[├└]── )?([A-Z]\w+)\s", line)
        if not match or not hasattr(errors, match.group(2)):
            continue
        depth = len(line) - len(line.lstrip(" │├└─"))
        name = match.group(2)
        drawn[name] = next((parents[d] for d in sorted(parents, reverse=True) if d < depth), None)
        parents = {d: n for d, n in parents.items() if d < depth} | {depth: name}
    assert set(drawn) == set(errors.__all__)
    for name, parent in drawn.items():
        base = getattr(errors, name).__bases__[0]
        expected = parent or APART.get(name, "Exception")
        assert base.__name__ == expected, name
