"""The task-list assistant: a chat whose turns are durable tasks over one session.

- `tasklist`: the list kept in ``session_state`` and the changes made to it,
  each applied once per idempotency key.
- `tools`: the tools the model calls, bound to a store and a session.
- `turn`: the prompt and the ``chat_turn`` workflow (one user message).
- `client`: `ChatClient` (the assistant for Python programs), starting turns,
  the session a plain ``ratchet chat`` resumes.
- `terminal`: the interactive loop behind ``ratchet chat``.
"""

from .client import ChatClient

__all__ = ["ChatClient"]
