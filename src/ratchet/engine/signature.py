"""A workflow's signature as types: its inputs checked before a task exists, its result read back typed.

The parameters after ``ctx`` are the workflow's inputs. `WorkflowSignature`
builds, once per workflow, a pydantic `TypeAdapter` over a TypedDict of them:
a parameter without a default is a required key, one with a default an
optional key, a ``**kwargs`` parameter lets any other key in. Checking is
pydantic's default (lax) mode, as pydantic-ai checks a tool's arguments:
``"5"`` is an ``int`` 5, ``{"sku": ...}`` is an ``Order``. A task stores its
inputs as the JSON of the checked values, and each run gets them back as the
types the signature names (`typed_inputs`).

The return annotation types the result: a result is stored as JSON
(a pydantic model as its fields), and `typed_result` reads it back as the
annotation's type.

An annotation pydantic cannot check (a class of the program's own that is
not a model) or cannot resolve (a name only imported under
``TYPE_CHECKING``) checks nothing: the workflow takes any value there, as
it did before inputs were checked.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, NotRequired, Required

from pydantic import ConfigDict, JsonValue, PydanticUserError, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..errors import InvalidInputs, InvalidResult
from ..validation import problems

__all__ = ["WorkflowSignature", "read_as"]

# Each problem of a refused input said, at most: the line stays one a person reads.
MAX_PROBLEMS = 5


class WorkflowSignature:
    """The inputs and the result a workflow function declares, as pydantic checks them.

    Args:
        fn: ``async def fn(ctx, ...)``; its first parameter is the context.
        name: the workflow's name, for error messages.
    """

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        self.name = name
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError):  # a callable Python cannot see into: anything goes
            signature = None
        hints = _type_hints(fn)
        parameters = list(signature.parameters.values())[1:] if signature is not None else []
        self.takes_any_key = signature is None or any(p.kind is p.VAR_KEYWORD for p in parameters)
        fields: dict[str, Any] = {}
        for parameter in parameters:
            if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                continue  # *args, **kwargs, and positional-only ones: no input can name them
            checked = _checkable(hints.get(parameter.name, Any))
            fields[parameter.name] = (
                Required[checked] if parameter.default is parameter.empty else NotRequired[checked]
            )
        self.input_names = tuple(fields)
        inputs = _typed_dict(f"{name} inputs", fields)
        inputs.__pydantic_config__ = ConfigDict(extra="allow" if self.takes_any_key else "forbid")
        self._inputs: TypeAdapter[dict[str, Any]] = TypeAdapter(inputs)
        returned = hints.get("return", Any) if signature is not None else Any
        self.result_type: Any = _checkable(returned)
        self._result: TypeAdapter[Any] = TypeAdapter(self.result_type)

    def check_inputs(self, inputs: Mapping[str, Any] | None) -> dict[str, JsonValue]:
        """`inputs` checked against the signature, as the JSON a task stores.

        Raises:
            InvalidInputs: an input has the wrong type, a required one is
                missing or one is not a parameter (unless ``**kwargs`` takes it).
        """
        checked = self._validate(dict(inputs or {}))
        dumped: dict[str, JsonValue] = self._inputs.dump_python(checked, mode="json")
        return dumped

    def typed_inputs(self, stored: Mapping[str, JsonValue]) -> dict[str, Any]:
        """A task's stored inputs as the signature types them, for a run to call the function with.

        Raises:
            InvalidInputs: they no longer fit (a task stored before the signature changed).
        """
        return self._validate(dict(stored))

    def typed_result(self, value: JsonValue) -> Any:
        """A stored result read as the return annotation types it.

        Raises:
            InvalidResult: the value does not fit that type.
        """
        return _read(self._result, self.result_type, value, what=f"the result of {self.name}")

    def _validate(self, inputs: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._inputs.validate_python(inputs)
        except ValidationError as error:
            raise InvalidInputs(self._refusal(error)) from None

    def _refusal(self, error: ValidationError) -> str:
        """One line: each input that was refused, and why."""
        said = []
        for problem in error.errors()[:MAX_PROBLEMS]:
            where = ".".join(str(part) for part in problem["loc"]) or "inputs"
            if problem["type"] == "extra_forbidden":
                said.append(f"{where}: not an input of {self.name} (it takes {self._takes()})")
            elif problem["type"] == "missing" and len(problem["loc"]) == 1:
                said.append(f"{where}: missing; {self.name} needs it")
            else:
                said.append(f"{where}: {problem['msg']}")
        more = error.error_count() - len(said)
        return f"inputs of {self.name}: " + "; ".join(said) + (f" (and {more} more)" if more > 0 else "")

    def _takes(self) -> str:
        return ", ".join(self.input_names) or "no inputs"


def _typed_dict(name: str, fields: dict[str, Any]) -> Any:
    """A TypedDict made at run time (type checkers only know those written out in a class statement)."""
    make: Any = TypedDict
    return make(name, fields)


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's annotations resolved; ``{}`` when one names what is not there at run time."""
    target = inspect.unwrap(fn)
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # NameError and kin: a name imported only for type checkers, say
        return {
            name: annotation
            for name, annotation in getattr(target, "__annotations__", {}).items()
            if not isinstance(annotation, str)  # what is resolved already still checks
        }


def _checkable(annotation: Any) -> Any:
    """`annotation` when pydantic can check it, else `Any` (a type of the program's own, say)."""
    if annotation is inspect.Parameter.empty:
        return Any
    try:
        TypeAdapter(annotation)
    except (PydanticUserError, TypeError, NameError):  # no schema for it, or a form pydantic refuses
        return Any
    return annotation


def read_as(value: JsonValue, as_type: Any, *, what: str) -> Any:
    """`value` (JSON, as stored) read as `as_type`, in pydantic's lax mode.

    Raises:
        InvalidResult: it does not fit; `what` names the value in the message.
    """
    return _read(TypeAdapter(as_type), as_type, value, what=what)


def _read(adapter: TypeAdapter[Any], shown: Any, value: JsonValue, *, what: str) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        name = getattr(shown, "__name__", None) or repr(shown)
        # A problem of the whole value has no place to name: it is said alone.
        said = problems(error, whole="", limit=MAX_PROBLEMS).removeprefix(": ")
        raise InvalidResult(f"{what} does not fit {name}: {said}") from None
