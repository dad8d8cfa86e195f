"""`ratchet demo`: the deploy case study, a crash in the middle, and every effect exactly once.

- `tools`: five deploy tools (check, build, push, apply, verify) that write to a ledger;
- `ledger`: that ledger, a SQLite file standing for the registry and the cluster;
- ``deploy_script.json``: the scripted model's answers;
- `paths`: where the demo keeps its files;
- `orchestration`: the story, with real worker processes and a real SIGKILL;
- `findings`: what the store and the ledger prove; `report`: what is printed,
  on the console it is given;
- `team`: the team workflow (architect, coder child tasks, reviewer) and its
  ``team_*.json`` scripts, one per role; `team_story`: ``ratchet demo team``.

The command itself, its options and exit codes, is `ratchet.cli.demo`.
"""
