-- The first schema: tasks, steps, the journal, messages, events, artifacts,
-- triggers, checkpoints, sessions and leases. Times are integer microseconds
-- since the Unix epoch (UTC); records kept whole are JSON text. Tables keyed by
-- (owner, number) are WITHOUT ROWID: one B-tree, so an append writes fewer pages.

CREATE TABLE tasks (
    id          TEXT PRIMARY KEY,
    status      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    record      TEXT NOT NULL
);
CREATE INDEX tasks_by_status ON tasks (status, created_at);

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
    content     BLOB NOT NULL
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
    dedupe_key  TEXT UNIQUE
);
CREATE INDEX triggers_by_due ON triggers (fire_at, priority, id);
CREATE INDEX triggers_by_task ON triggers (task_id);

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
    released    INTEGER NOT NULL
);

CREATE TABLE lease_claims (
    task_id     TEXT NOT NULL,
    token       INTEGER NOT NULL,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (task_id, token)
) WITHOUT ROWID;
