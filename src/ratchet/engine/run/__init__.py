"""Running tasks: who takes a task up, under which lease, and what happens when it cannot run.

- `runner`: `run_task`, one task run under a lease (claim, heartbeat, replay, record its end);
- `holders`: `WorkerIdentity`, the process a lease records, and whether a holder of this host is gone;
- `worker`: `Worker`, claiming due triggers and orphaned tasks and running them;
- `presence`: `Presence`, a worker's record in the store while it runs, idle or not;
- `tree`: `run_tree`, a task and its child tasks run in this process (``ratchet run``);
- `cancelling`: a task cancelled, and every child task it started that has not ended;
- `staleness`: validate before resume, a task left alone too long set aside;
- `code_wait`: ``waiting(code)``, a task whose code or workspace cannot be used here;
- `unreadable`: a task whose stored rows cannot be read, parked so workers go on.
"""
