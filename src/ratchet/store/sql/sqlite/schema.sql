-- The current schema, whole. A fresh database is made from this file; older
-- ones reach the same schema through migrations/ (a test proves both agree).

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    status      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    record      TEXT NOT NULL,
    waiting_on  TEXT,
    priority    INTEGER NOT NULL DEFAULT 5,
    parent_id   TEXT,
    name        TEXT,
    agent       TEXT,
    updated_at  INTEGER,
    model       TEXT,
    cost        REAL NOT NULL DEFAULT 0,
    queue_name  TEXT,
    queue_partition TEXT,
    code_version TEXT
);
CREATE INDEX tasks_by_status ON tasks (status, created_at, id);
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at, id);
CREATE INDEX tasks_by_created ON tasks (created_at, id);
CREATE INDEX tasks_by_name ON tasks (name, created_at, id);
CREATE INDEX tasks_by_agent ON tasks (agent, created_at, id);
CREATE INDEX tasks_by_updated ON tasks (updated_at, created_at, id);
CREATE INDEX tasks_by_cost ON tasks (cost, created_at, id);

-- What finds a task besides its columns (docs/finding-tasks.md): its labels, and the words of
-- its name, instruction and (once it ended) result or error, in an FTS5 index kept in step
-- with task_text by the triggers.
CREATE TABLE task_labels (
    task_id     TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    PRIMARY KEY (task_id, key)
) WITHOUT ROWID;
CREATE INDEX task_labels_by_value ON task_labels (key, value, task_id);

CREATE TABLE task_text (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL UNIQUE,
    words       TEXT NOT NULL
);
CREATE VIRTUAL TABLE task_search USING fts5(
    words, content = 'task_text', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0'
);
CREATE TRIGGER task_text_added AFTER INSERT ON task_text BEGIN
    INSERT INTO task_search (rowid, words) VALUES (new.id, new.words);
END;
CREATE TRIGGER task_text_removed AFTER DELETE ON task_text BEGIN
    INSERT INTO task_search (task_search, rowid, words) VALUES ('delete', old.id, old.words);
END;
CREATE TRIGGER task_text_changed AFTER UPDATE ON task_text BEGIN
    INSERT INTO task_search (task_search, rowid, words) VALUES ('delete', old.id, old.words);
    INSERT INTO task_search (rowid, words) VALUES (new.id, new.words);
END;

CREATE TABLE steps (
    task_id     TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    status      TEXT NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
) WITHOUT ROWID;

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
    started_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    error_type       TEXT,
    next_attempt_at  INTEGER,
    meta             TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

CREATE TABLE messages (
    thread_id   TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID;

CREATE TABLE events (
    task_id          TEXT NOT NULL,
    seq              INTEGER NOT NULL,
    time             INTEGER NOT NULL,
    kind             TEXT NOT NULL,
    severity         TEXT NOT NULL,
    message          TEXT NOT NULL,
    display_message  TEXT,
    data             TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;

CREATE TABLE artifacts (
    id          TEXT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    type        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    bytes       INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    content     BLOB NOT NULL,
    step        INTEGER
);
CREATE INDEX artifacts_by_task ON artifacts (task_id, created_at);

CREATE TABLE triggers (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fire_at     INTEGER NOT NULL,
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
    created_at  INTEGER NOT NULL,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, number)
) WITHOUT ROWID;

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    record      TEXT NOT NULL
);

CREATE TABLE leases (
    task_id     TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    token       INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    released    INTEGER NOT NULL,
    granted_at  INTEGER,
    took_over   INTEGER NOT NULL DEFAULT 0,
    renewed_at  INTEGER,
    pid_space   TEXT NOT NULL DEFAULT '',
    pid_started INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE lease_claims (
    task_id     TEXT NOT NULL,
    token       INTEGER NOT NULL,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    granted_at  INTEGER,
    took_over   INTEGER NOT NULL DEFAULT 0,
    released    INTEGER NOT NULL DEFAULT 0,
    renewed_at  INTEGER,
    pid_space   TEXT NOT NULL DEFAULT '',
    pid_started INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, token)
) WITHOUT ROWID;

-- Each worker that says it runs, one row a name (store/ops/workers.py): written when it starts and at
-- each heartbeat, deleted when it stops; gone from expires_at on.
CREATE TABLE workers (
    name         TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    concurrency  INTEGER NOT NULL,
    lease_ttl    REAL NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) WITHOUT ROWID;

-- Daily spend caps beyond a task (store/ops/spend.py): one row a cap; one row a cap and UTC day,
-- what its tasks' priced model calls cost that day, and whether its 80 % was told.
CREATE TABLE spend_caps (
    scope        TEXT NOT NULL,
    name         TEXT NOT NULL,
    daily        REAL NOT NULL,
    approve_over INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;

CREATE TABLE spend_days (
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    day           TEXT NOT NULL,
    spent         REAL NOT NULL,
    pressure_told INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, name, day)
) WITHOUT ROWID;

CREATE TABLE approvals (
    task_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    status        TEXT NOT NULL,
    requested_at  INTEGER NOT NULL,
    record        TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
CREATE INDEX approvals_by_status ON approvals (status, requested_at);

CREATE TABLE inbox (
    task_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    sent_at     INTEGER NOT NULL,
    taken_by    INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
) WITHOUT ROWID;
-- A receive reads the oldest message of its name no receive took yet.
CREATE INDEX inbox_pending ON inbox (task_id, name, seq) WHERE taken_by IS NULL;

CREATE TABLE task_grants (
    task_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    granted_by  TEXT,
    granted_at  INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent)
) WITHOUT ROWID;

CREATE TABLE task_changes (
    position    INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    time        INTEGER NOT NULL,
    record      TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE contents (
    task_id     TEXT NOT NULL,
    hash        TEXT NOT NULL,
    prev        TEXT,
    body        TEXT NOT NULL,
    PRIMARY KEY (task_id, hash)
) WITHOUT ROWID;

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
    task_id         BLOB,
    task_path       TEXT,
    task_writes     BLOB,
    write_hashes    TEXT,
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

CREATE TABLE langgraph_values (
    thread_id       TEXT NOT NULL,
    hash            TEXT NOT NULL,
    prev            TEXT,
    items           TEXT,
    type            TEXT NOT NULL,
    body            BLOB NOT NULL,
    UNIQUE (thread_id, hash)
);

CREATE TABLE streams (
    task_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    seq         INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
) WITHOUT ROWID;
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

CREATE INDEX tasks_by_queue ON tasks (queue_name, queue_partition) WHERE queue_name IS NOT NULL;
