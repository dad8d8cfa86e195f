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
    checkpoint_id   BLOB NOT NULL,
    parent_id       BLOB,
    run_id          TEXT,
    type            TEXT NOT NULL,
    body            BLOB NOT NULL,
    metadata        TEXT NOT NULL,
    channel_values  TEXT NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;

CREATE TABLE langgraph_writes (
    thread_id       TEXT NOT NULL,
    checkpoint_ns   TEXT NOT NULL,
    checkpoint_id   BLOB NOT NULL,
    task_id         BLOB NOT NULL,
    task_path       TEXT NOT NULL,
    writes          BLOB NOT NULL,
    value_hashes    TEXT,
    PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id)
) WITHOUT ROWID;

-- langgraph_values has a rowid: its rows fill pages in the order they are
-- written, and the unique index on (thread_id, hash) is what lands at random
-- places (a table clustered on the hash left its pages a third empty).
CREATE TABLE langgraph_values (
    thread_id       TEXT NOT NULL,
    hash            TEXT NOT NULL,
    prev            TEXT,
    items           TEXT,
    type            TEXT NOT NULL,
    body            BLOB NOT NULL,
    UNIQUE (thread_id, hash)
);
