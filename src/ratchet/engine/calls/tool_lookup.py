"""Which tool a workflow's call names: a `Tool` as given, or the workflow's tool of that name."""

from __future__ import annotations

from ...errors import InputError
from ...tools import Tool

__all__ = ["resolve_tool"]


def resolve_tool(tools: dict[str, Tool], named: str | Tool, workflow: str) -> Tool:
    """The tool a call names: a `Tool` as given, or the workflow's tool of that name.

    A `Tool` the workflow does not list is fine (it is the workflow's own
    code, passed again on every replay); one that shares its name with a
    different tool of the workflow is refused, as the journal could not tell them apart.
    """
    if isinstance(named, Tool):
        listed = tools.get(named.name)
        if listed is not None and listed is not named:
            raise InputError(
                f"workflow {workflow} already has another tool named {named.name!r}; "
                "give this one another name (@ratchet.tool(name=...))"
            )
        return named
    tool = tools.get(named)
    if tool is None:
        known = ", ".join(sorted(tools)) or "none"
        raise InputError(f"workflow {workflow} has no tool {named!r} (it has: {known})")
    return tool
