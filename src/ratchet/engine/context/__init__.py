"""The durable context a workflow runs in (`Context`, context.py), and the parts it is made of."""

from .context import ApprovalHook, Context

__all__ = ["ApprovalHook", "Context"]
