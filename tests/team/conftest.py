"""Fixtures of the team tests: the agent tests' OpenAI-compatible server on loopback (``server``)."""

from __future__ import annotations

from ..agent.test_openai_agent import server  # noqa: F401 (a fixture, found by pytest here)
