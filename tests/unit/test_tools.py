"""Tools: the schema a model sees comes from the type hints and the docstring."""

from __future__ import annotations

import pytest

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
    assert schema["description"] == "Roll a service out."
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
