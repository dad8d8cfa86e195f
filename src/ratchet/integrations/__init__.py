"""Ratchet under other agent frameworks: each bridge is a subpackage, loaded only when imported.

Each imports Ratchet; nothing of Ratchet imports them but the CLI command that drives one.

- `ratchet.integrations.langgraph`: `RatchetSaver`, LangGraph's checkpointer
  on any Ratchet store (extra ``[langgraph]``).
- `ratchet.integrations.pydantic_ai`: `RatchetAgent`, a pydantic-ai agent
  whose runs are durable tasks (extra ``[pydantic-ai]``).
"""
