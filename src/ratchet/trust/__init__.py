"""Who may run or write what: one place to review Ratchet's security.

- `code` and `seal`: which code a process may import for a task, and the seal
  that proves a task's code references were made by a holder of the key;
- `workspace`: where a task's files live, never where code is taken from;
- `scope`: which agents may write a task;
- `tokens` and `hosts`: who may talk to `ratchet serve` and `ratchet mcp`
  (bearer tokens, the names a server answers to);
- `listening`: the bound socket both servers are served on.
"""
