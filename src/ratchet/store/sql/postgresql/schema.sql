-- The current schema, whole. A fresh database is made from this file; older
-- ones reach the same schema through migrations/ (a test proves both agree).
-- Times are integer microseconds since the Unix epoch (UTC); records kept
-- whole are JSON text; "position" numbers rows in insertion order.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    status      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    record      TEXT NOT NULL,
    position    BIGINT GENERATED ALWAYS AS IDENTITY,
    waiting_on  TEXT,
    priority    INTEGER NOT NULL DEFAULT 5,
    parent_id   TEXT,
    name        TEXT,
    agent       TEXT,
    updated_at  BIGINT,
    model       TEXT,
    cost        DOUBLE PRECISION NOT NULL DEFAULT 0,
    queue_name  TEXT,
    queue_partition TEXT,
    code_version TEXT
);
-- Every order a listing sorts by, ending with the creation time and the id (a total order);
-- names and ids by code point (COLLATE "C"), as on SQLite and in Python.
CREATE INDEX tasks_by_status ON tasks (status, created_at, id COLLATE "C");
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at, id COLLATE "C");
CREATE INDEX tasks_by_created ON tasks (created_at, id COLLATE "C");
CREATE INDEX tasks_by_name ON tasks (name COLLATE "C", created_at, id COLLATE "C");
CREATE INDEX tasks_by_agent ON tasks (agent, created_at, id COLLATE "C");
CREATE INDEX tasks_by_updated ON tasks (updated_at, created_at, id COLLATE "C");
CREATE INDEX tasks_by_cost ON tasks (cost, created_at, id COLLATE "C");
CREATE INDEX tasks_by_id ON tasks (id COLLATE "C");

-- What finds a task besides its columns (docs/finding-tasks.md): its labels, and the words of
-- its name, instruction and (once it ended) result or error, in a tsvector with a GIN index.
CREATE TABLE task_labels (
    task_id     TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    PRIMARY KEY (task_id, key)
);
CREATE INDEX task_labels_by_value ON task_labels (key, value, task_id);

CREATE TABLE task_text (
    task_id     TEXT PRIMARY KEY,
    words       TSVECTOR NOT NULL
);
CREATE INDEX task_text_by_word ON task_text USING gin (words);

CREATE TABLE steps (
    task_id     TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    status      TEXT NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
);

CREATE TABLE operations (
    task_id          TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    kind             TEXT NOT NULL,
    name             TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    idempotency_key  TEXT NOT NULL,
    status           TEXT NOT NULL,
    input            TEXT,
    output           TEXT,
    error            TEXT,
    started_at       BIGINT NOT NULL,
    finished_at      BIGINT,
    error_type       TEXT,
    next_attempt_at  BIGINT,
    meta             TEXT NOT NULL DEFAULT '{}',
    archive          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, seq, archive)
) PARTITION BY RANGE (archive);
-- The journal and the events of a task are in the live partition (archive 0) while it may still be
-- written, then in its ended day's and status's partition (migration 0023, store/sql/postgresql/history.py).
CREATE TABLE operations_live PARTITION OF operations FOR VALUES FROM (0) TO (1);

CREATE TABLE messages (
    thread_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);

CREATE TABLE events (
    task_id          TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    time             BIGINT NOT NULL,
    kind             TEXT NOT NULL,
    severity         TEXT NOT NULL,
    message          TEXT NOT NULL,
    display_message  TEXT,
    data             TEXT NOT NULL,
    archive          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, seq, archive)
) PARTITION BY RANGE (archive);
CREATE TABLE events_live PARTITION OF events FOR VALUES FROM (0) TO (1);

-- The ended tasks whose journal and events moved to a partition: which one (its day and status),
-- and the highest event seq moved (an event added later is numbered on from it, in the live partition).
CREATE TABLE archived_tasks (
    task_id     TEXT PRIMARY KEY,
    archive     INTEGER NOT NULL,
    last_event  INTEGER NOT NULL
);
CREATE INDEX archived_tasks_by_archive ON archived_tasks (archive);

CREATE TABLE artifacts (
    id          TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    type        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    bytes       BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    content     BYTEA NOT NULL,
    position    BIGINT GENERATED ALWAYS AS IDENTITY,
    step        INTEGER
);
CREATE INDEX artifacts_by_task ON artifacts (task_id, created_at);

CREATE TABLE triggers (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    fire_at     BIGINT NOT NULL,
    priority    INTEGER NOT NULL,
    task_id     TEXT,
    session_id  TEXT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    dedupe_key  TEXT
);
-- A task has one queued trigger per kind (later ones coalesce into it).
CREATE UNIQUE INDEX triggers_one_per_task_kind ON triggers (task_id, kind) WHERE task_id IS NOT NULL;
CREATE UNIQUE INDEX triggers_by_dedupe_key ON triggers (dedupe_key) WHERE task_id IS NULL;
-- Claims read due work by priority, then time; next_due_at reads the earliest time.
CREATE INDEX triggers_by_due ON triggers (priority, fire_at, id);
CREATE INDEX triggers_by_time ON triggers (fire_at);

CREATE TABLE checkpoints (
    task_id     TEXT NOT NULL,
    number      INTEGER NOT NULL,
    created_at  BIGINT NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, number)
);

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    updated_at  BIGINT NOT NULL,
    record      TEXT NOT NULL
);

CREATE TABLE leases (
    task_id     TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    token       BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    released    BOOLEAN NOT NULL,
    granted_at  BIGINT,
    took_over   BOOLEAN NOT NULL DEFAULT FALSE,
    renewed_at  BIGINT,
    pid_space   TEXT NOT NULL DEFAULT '',
    pid_started BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE lease_claims (
    task_id     TEXT NOT NULL,
    token       BIGINT NOT NULL,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    expires_at  BIGINT NOT NULL,
    granted_at  BIGINT,
    took_over   BOOLEAN NOT NULL DEFAULT FALSE,
    released    BOOLEAN NOT NULL DEFAULT FALSE,
    renewed_at  BIGINT,
    pid_space   TEXT NOT NULL DEFAULT '',
    pid_started BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, token)
);

-- Each worker that says it runs, one row a name (store/ops/workers.py): written when it starts and at
-- each heartbeat, deleted when it stops; gone from expires_at on.
CREATE TABLE workers (
    name         TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    concurrency  INTEGER NOT NULL,
    lease_ttl    DOUBLE PRECISION NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);

-- Daily spend caps beyond a task (store/ops/spend.py): one row a cap; one row a cap and UTC day,
-- what its tasks' priced model calls cost that day, and whether its 80 % was told.
CREATE TABLE spend_caps (
    scope        TEXT NOT NULL,
    name         TEXT NOT NULL,
    daily        DOUBLE PRECISION NOT NULL,
    approve_over BOOLEAN NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (scope, name)
);

CREATE TABLE spend_days (
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    day           TEXT NOT NULL,
    spent         DOUBLE PRECISION NOT NULL,
    pressure_told BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (scope, name, day)
);

CREATE TABLE approvals (
    task_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    status        TEXT NOT NULL,
    requested_at  BIGINT NOT NULL,
    record        TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE INDEX approvals_by_status ON approvals (status, requested_at);

CREATE TABLE inbox (
    task_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    sent_at     BIGINT NOT NULL,
    taken_by    INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
-- A receive reads the oldest message of its name no receive took yet.
CREATE INDEX inbox_pending ON inbox (task_id, name, seq) WHERE taken_by IS NULL;

CREATE TABLE task_grants (
    task_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    granted_by  TEXT,
    granted_at  BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent)
);

CREATE TABLE task_changes (
    position    BIGINT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    time        BIGINT NOT NULL,
    record      TEXT NOT NULL
);

CREATE TABLE contents (
    task_id     TEXT NOT NULL,
    hash        TEXT NOT NULL,
    prev        TEXT,
    body        TEXT NOT NULL,
    PRIMARY KEY (task_id, hash)
);

CREATE TABLE langgraph_checkpoints (
    thread_id       TEXT NOT NULL,
    checkpoint_ns   TEXT NOT NULL,
    checkpoint_id   BYTEA NOT NULL,
    parent_id       BYTEA,
    run_id          TEXT,
    type            TEXT NOT NULL,
    body            BYTEA NOT NULL,
    metadata        BYTEA NOT NULL,
    channel_values  TEXT NOT NULL,
    task_id         BYTEA,
    task_path       TEXT,
    task_writes     BYTEA,
    write_hashes    TEXT,
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
-- The fence as a statement that fails (migration 0013): SQLSTATE RLOST becomes LeaseLost.
CREATE FUNCTION ratchet_check_fence(fenced_task TEXT, fenced_token BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
DECLARE
    current_token BIGINT;
    is_released BOOLEAN;
BEGIN
    SELECT token, released INTO current_token, is_released
    FROM leases WHERE task_id = fenced_task FOR SHARE;
    IF NOT FOUND OR current_token <> fenced_token OR is_released THEN
        RAISE EXCEPTION 'lease % on task % is no longer current', fenced_token, fenced_task
            USING ERRCODE = 'RLOST';
    END IF;
    RETURN TRUE;
END $$;

-- A write that must change a row, as a statement that fails when it changed none: the
-- journal's writes call it, so they too can be sent unread, with the commit.
-- SQLSTATE RNONE; the driver raises the refusal the store gave with the write.
CREATE FUNCTION ratchet_expect_written(written BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
BEGIN
    IF written = 0 THEN
        RAISE EXCEPTION 'the write changed no row' USING ERRCODE = 'RNONE';
    END IF;
    RETURN TRUE;
END $$;

CREATE TABLE streams (
    task_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    seq         INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
);
CREATE UNIQUE INDEX streams_values ON streams (task_id, seq) WHERE kind = 'value';
-- Limits every worker honours (store/ops/limits.py), one row a key: what a person set
-- (rpm, tpm, concurrency) and the pacing state of the key, changed in short transactions:
-- the time the next request and the next token may go (GCRA's theoretical arrival times)
-- and the end of the last Retry-After a provider answered with.
CREATE TABLE limits (
    key             TEXT PRIMARY KEY,
    rpm             INTEGER,
    tpm             INTEGER,
    concurrency     INTEGER,
    next_request_at BIGINT NOT NULL DEFAULT 0,
    next_token_at   BIGINT NOT NULL DEFAULT 0,
    blocked_until   BIGINT NOT NULL DEFAULT 0
);

-- A turn a call took but could not use at once: the call comes back for it (by its holder,
-- task:seq:attempt) after waiting, rather than taking a second one.
CREATE TABLE limit_turns (
    holder  TEXT PRIMARY KEY,
    at      BIGINT NOT NULL
);

-- A model call in flight under a key's concurrency: alive while its task's lease (that token)
-- is, so a slot a dead worker held comes back when its lease expires.
CREATE TABLE limit_slots (
    key     TEXT NOT NULL,
    holder  TEXT NOT NULL,
    task_id TEXT NOT NULL,
    token   BIGINT NOT NULL,
    PRIMARY KEY (key, holder)
);

CREATE INDEX tasks_by_queue ON tasks (queue_name, queue_partition) WHERE queue_name IS NOT NULL;
