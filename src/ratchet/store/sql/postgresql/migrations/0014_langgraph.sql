-- LangGraph's checkpoints (ratchet.integrations.langgraph.RatchetSaver), in
-- tables of their own. A checkpoint names its channel values by hash in
-- langgraph_values, where each value of a thread is stored once; a list
-- value that extends an earlier one (a message appended to a history) is
-- stored as that value's hash (prev) and the items it adds (or the hash of
-- the value that lists them, items, shared with the pending write that
-- brought them), so a thread's size grows with what it adds, not with its
-- whole history at every step. A large pending write's value is a value too
-- (value_hash).
-- Keyed per thread: deleting or pruning a thread leaves no row of it behind
-- (store/langgraph_ops.py).

CREATE TABLE langgraph_checkpoints (
    thread_id       TEXT NOT NULL,
    checkpoint_ns   TEXT NOT NULL,
    checkpoint_id   TEXT NOT NULL,
    parent_id       TEXT,
    run_id          TEXT,
    type            TEXT NOT NULL,
    body            BYTEA NOT NULL,
    metadata        TEXT NOT NULL,
    channel_values  TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
);

CREATE TABLE langgraph_writes (
    thread_id       TEXT NOT NULL,
    checkpoint_ns   TEXT NOT NULL,
    checkpoint_id   TEXT NOT NULL,
    task_id         TEXT NOT NULL,
    idx             INTEGER NOT NULL,
    channel         TEXT NOT NULL,
    type            TEXT NOT NULL,
    value           BYTEA NOT NULL,
    value_hash      TEXT,
    task_path       TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

CREATE TABLE langgraph_values (
    thread_id       TEXT NOT NULL,
    hash            TEXT NOT NULL,
    prev            TEXT,
    items           TEXT,
    type            TEXT NOT NULL,
    body            BYTEA NOT NULL,
    PRIMARY KEY (thread_id, hash)
);
