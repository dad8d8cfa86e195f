"""Group commit: write transactions of one store that arrive together share one database commit.

A commit is what a durable write costs (an fsync on SQLite with
``durability=full``, a WAL flush and a round trip on PostgreSQL), so when many
tasks of one worker write at once, `Transaction` (transaction.py) lets their
transactions share it:

- The first write transaction to arrive when no group is open *leads* a new
  group: it begins the database transaction and runs its block as usual (no
  savepoint: a lone task pays nothing extra).
- A write transaction that arrives while a group is open *joins* it: it waits
  for its turn, then runs its block on the leader's connection, inside the same
  database transaction, within a ``SAVEPOINT``. If its block (or its fence
  check) fails, only its own writes are rolled back, and it sees its own error
  at once; the others go on. A transaction of one write (``alone``) needs no
  savepoint on a store whose failed statement changes nothing (SQLite).
- When the leader's block is done, it gives the turn to each waiting joiner in
  the order they arrived, then commits once. The group stops admitting joiners
  when it has `max_members` or `max_wait` seconds have passed since the
  leader's block ended; a joiner already waiting then still has its turn, and
  those a group could not serve (its leader failed) go on, in their order,
  into the next group, ahead of whoever arrives later (`_hand_over`). Every
  member's ``async with`` returns only after that
  commit (or raises its error: then none of them is committed), so an intent is
  committed before its effect starts, and a task's next write starts only
  after its previous one committed: a task's writes are never reordered.
- After its block, a leader whose event loop has other work ready yields once,
  so the tasks about to write can join; with nothing else ready it commits at
  once. On SQLite (one connection, whose statements never yield to the loop)
  that one pass is what forms the group; on PostgreSQL the members arrive while
  the leader's statements wait for the server.
- A member's fence check comes out as it would alone (`_in_task_order`):
  members run in the order they arrived, and on a pooled store a fenced
  transaction starts only once the statements of its task's previous one ran.
- Each member's change-feed topics and task changes are its own: kept apart
  while the group runs, dropped with a member rolled back to its savepoint, and
  the survivors' logged and published only with the shared commit.

Read transactions never join a group. Which stores group, and how to turn it
off, is in docs/stores.md; why it keeps the contract, in docs/durability.md.
"""

from .commit import GroupCommit, Member
from .protocols import Joinable

__all__ = ["GroupCommit", "Joinable", "Member"]
