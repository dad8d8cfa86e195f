-- LangGraph's checkpoints (ratchet.integrations.langgraph.RatchetSaver), in
-- tables of their own. A checkpoint names its channel values by hash in
-- langgraph_values, where each value of a thread is stored once; a list
-- value that extends an earlier one (a message appended to a history) is
-- stored as that value's hash (prev) and the items it adds (or the hash of
-- the value that lists them, items, shared with the pending write that
-- brought them), so a thread's size grows with what it adds, not with its
-- whole history at every step. A task's pending writes on a checkpoint are
-- one row (store/sql/langgraph_write_rows.py); a large write's value is a value
-- too, named in value_hashes.
-- Keyed per thread: deleting or pruning a thread leaves no row of it behind
-- (store/ops/langgraph.py).

CREATE TABLE langgraph_checkpoints (
    thread_id       TEXT NOT NULL,
    checkpoint_ns   TEXT NOT NULL,
    checkpoint_id   BYTEA NOT NULL,
    parent_id       BYTEA,
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
    checkpoint_id   BYTEA NOT NULL,
    task_id         BYTEA NOT NULL,
    task_path       TEXT NOT NULL,
    writes          BYTEA NOT NULL,
    value_hashes    TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id)
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
