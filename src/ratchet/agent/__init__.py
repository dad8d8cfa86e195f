"""The agent: a planner and a step loop on the durable engine (docs/agent.md)."""

from ..trust.workspace import workspace_for
from .loop import AGENT_WORKFLOW, agent_loop
from .spec import Agent, AgentSpec, load_tools

__all__ = ["AGENT_WORKFLOW", "Agent", "AgentSpec", "agent_loop", "load_tools", "workspace_for"]
