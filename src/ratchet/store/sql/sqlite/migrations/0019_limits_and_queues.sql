-- Limits every worker honours (store/ops/limits.py), one row a key: what a person set
-- (rpm, tpm, concurrency) and the pacing state of the key, changed in short transactions:
-- the time the next request and the next token may go (GCRA's theoretical arrival times)
-- and the end of the last Retry-After a provider answered with.
CREATE TABLE limits (
    key             TEXT PRIMARY KEY,
    rpm             INTEGER,
    tpm             INTEGER,
    concurrency     INTEGER,
    next_request_at INTEGER NOT NULL DEFAULT 0,
    next_token_at   INTEGER NOT NULL DEFAULT 0,
    blocked_until   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- A turn a call took but could not use at once: the call comes back for it (by its holder,
-- task:seq:attempt) after waiting, rather than taking a second one.
CREATE TABLE limit_turns (
    holder  TEXT PRIMARY KEY,
    at      INTEGER NOT NULL
) WITHOUT ROWID;

-- A model call in flight under a key's concurrency: alive while its task's lease (that token)
-- is, so a slot a dead worker held comes back when its lease expires.
CREATE TABLE limit_slots (
    key     TEXT NOT NULL,
    holder  TEXT NOT NULL,
    task_id TEXT NOT NULL,
    token   INTEGER NOT NULL,
    PRIMARY KEY (key, holder)
) WITHOUT ROWID;

-- The queue a task runs in, and its partition: a queue's concurrency counts the tasks of it
-- (of the partition) that hold a live lease.
ALTER TABLE tasks ADD COLUMN queue_name TEXT;
ALTER TABLE tasks ADD COLUMN queue_partition TEXT;
CREATE INDEX tasks_by_queue ON tasks (queue_name, queue_partition) WHERE queue_name IS NOT NULL;
