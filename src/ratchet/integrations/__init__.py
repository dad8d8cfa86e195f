"""Ratchet under other agent frameworks: each bridge is a subpackage, loaded only when imported.

- `ratchet.integrations.langgraph`: `RatchetSaver`, LangGraph's checkpointer
  on any Ratchet store (extra ``[langgraph]``).
"""
