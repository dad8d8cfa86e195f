"""Tools: the schema a model sees comes from the type hints and the docstring."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

import ratchet
from ratchet.errors import NonRetryableError


@ratchet.tool(risk="external_action")
def deploy(service: str, ctx: ratchet.ToolContext, replicas: int = 2, note: str | None = None) -> str:
    """Roll a service out.

    The new image replaces the running one, pod by pod.

    Args:
        service: the service's name, e.g.
            "checkout".
        replicas (int): how many pods to run.

    Returns:
        what happened.
    """
    return f"{service} x{replicas} ({ctx.idempotency_key})"


def test_the_schema_comes_from_the_hints_and_the_docstring() -> None:
    schema = deploy.schema()
    assert schema["name"] == "deploy"
    # The docstring's text before its sections; Returns is left out.
    assert (
        schema["description"] == "Roll a service out.\n\nThe new image replaces the running one, pod by pod."
    )
    properties = schema["parameters"]["properties"]
    assert set(properties) == {"service", "replicas", "note"}  # the ToolContext stays hidden
    assert properties["service"] == {
        "description": 'the service\'s name, e.g. "checkout".',
        "title": "Service",
        "type": "string",
    }
    assert properties["replicas"]["description"] == "how many pods to run."
    assert properties["replicas"]["default"] == 2
    assert "description" not in properties["note"]
    assert schema["parameters"]["required"] == ["service"]


def test_a_tool_taking_the_context_is_keyed_and_not_safe_to_repeat() -> None:
    assert deploy.takes_key and not deploy.safe_to_repeat
    assert str(deploy.risk) == "external_action"


async def test_arguments_are_validated_against_the_signature() -> None:
    context = ratchet.ToolContext(task_id="t", seq=3, attempt=1, idempotency_key="t:3")
    assert await deploy.invoke({"service": "api", "replicas": "3"}, context) == "api x3 (t:3)"
    with pytest.raises(NonRetryableError, match="replicas"):
        await deploy.invoke({"service": "api", "replicas": "many"}, context)
    with pytest.raises(NonRetryableError, match="colour: Extra inputs"):
        await deploy.invoke({"service": "api", "colour": "red"}, context)
    with pytest.raises(NonRetryableError, match="service"):
        await deploy.invoke({}, context)


async def test_a_context_is_needed_only_by_a_tool_that_takes_one() -> None:
    # The journal builds a ToolContext only for a tool with a ToolContext parameter.
    with pytest.raises(TypeError, match="deploy takes a ToolContext"):
        await deploy.invoke({"service": "api"}, None)
    assert not pick.takes_key
    assert await pick.invoke({"n": 2}, None) == 2


@ratchet.tool(risk="read_only")
def pick(
    n: Annotated[int, Field(ge=1, le=10)],
    label: Annotated[str, Field(description="what the annotation says", max_length=5)] = "x",
) -> int:
    """Pick a number.

    Args:
        n: how many to pick.
        label: what the docstring says.
    """
    return n


def test_annotated_field_constraints_are_enforced_and_shown() -> None:
    properties = pick.schema()["parameters"]["properties"]
    assert properties["n"]["minimum"] == 1 and properties["n"]["maximum"] == 10
    assert properties["n"]["description"] == "how many to pick."
    # The annotation's own description wins over the docstring's.
    assert properties["label"]["description"] == "what the annotation says"
    assert properties["label"]["maxLength"] == 5
    assert pick.validate({"n": 10}) == {"n": 10, "label": "x"}
    with pytest.raises(NonRetryableError, match=r"bad arguments for pick: n: .*less than or equal to 10"):
        pick.validate({"n": 99})
    with pytest.raises(NonRetryableError, match="label"):
        pick.validate({"n": 1, "label": "too long"})


def test_a_tool_context_under_annotated_is_still_hidden() -> None:
    @ratchet.tool
    def keyed(ctx: Annotated[ratchet.ToolContext, "the call"], n: int) -> int:
        return n

    assert keyed.takes_key
    assert set(keyed.schema()["parameters"]["properties"]) == {"n"}


def _numpy(service: str, replicas: int = 2) -> None:
    """Roll a service
    out now.

    Parameters
    ----------
    service : str
        the service's name, e.g.
        "checkout".
    replicas : int, optional
        how many pods to run.

    Returns
    -------
    None
    """


def _sphinx(service: str, replicas: int = 2) -> None:
    """Roll a service out now.

    :param service: the service's name, e.g.
        "checkout".
    :param int replicas: how many pods to run.
    :returns: nothing.
    """


def _google(service: str, replicas: int = 2) -> None:
    """Roll a service out now.

    Args:
        service (str): the service's name, e.g.
            "checkout".
        replicas: how many pods to run.

    Attributes:
        other: not an argument.
    """


@pytest.mark.parametrize("fn", [_numpy, _sphinx, _google], ids=["numpy", "sphinx", "google"])
def test_every_docstring_style_describes_the_arguments(fn: Any) -> None:
    schema = ratchet.tool(fn).schema()
    assert schema["description"] == "Roll a service out now."
    properties = schema["parameters"]["properties"]
    assert properties["service"]["description"] == 'the service\'s name, e.g. "checkout".'
    assert properties["replicas"]["description"] == "how many pods to run."
    assert set(properties) == {"service", "replicas"}
