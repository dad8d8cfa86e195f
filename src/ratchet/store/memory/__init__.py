"""The memory store (``memory://``): the reference implementation of the store's operations.

`MemoryStore` (store.py) begins and ends the transactions; `MemoryOps`
(ops.py) holds the tables, plain dicts of JSON text that each write changes
through an undo log (undo.py), and the operations on them. The operations
declared apart on the interface (store/ops/) are implemented in the module
of the same name here.
"""

from .store import MemoryStore

__all__ = ["MemoryStore"]
