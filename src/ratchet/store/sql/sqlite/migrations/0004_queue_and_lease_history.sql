-- Triggers of one task coalesce: one queued trigger per task and kind (the
-- earliest time and most urgent priority of those queued are kept); dedupe
-- keys now matter only for triggers of no task. Lease claims keep when they
-- were granted, whether they took over a live lease, and how they ended.

CREATE TABLE triggers_coalesced (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    fire_at     INTEGER NOT NULL,
    priority    INTEGER NOT NULL,
    task_id     TEXT,
    session_id  TEXT,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    dedupe_key  TEXT
);
INSERT INTO triggers_coalesced (id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key)
SELECT t.id,
       CASE WHEN t.task_id IS NULL THEN t.fire_at
            ELSE (SELECT MIN(u.fire_at) FROM triggers u WHERE u.task_id = t.task_id AND u.kind = t.kind) END,
       CASE WHEN t.task_id IS NULL THEN t.priority
            ELSE (SELECT MIN(u.priority) FROM triggers u WHERE u.task_id = t.task_id AND u.kind = t.kind) END,
       t.task_id, t.session_id, t.kind, t.payload, t.dedupe_key
FROM triggers t
WHERE t.task_id IS NULL
   OR t.id = (SELECT MIN(u.id) FROM triggers u WHERE u.task_id = t.task_id AND u.kind = t.kind);
DROP TABLE triggers;
ALTER TABLE triggers_coalesced RENAME TO triggers;
CREATE INDEX triggers_by_due ON triggers (fire_at, priority, id);
CREATE UNIQUE INDEX triggers_one_per_task_kind ON triggers (task_id, kind) WHERE task_id IS NOT NULL;
CREATE UNIQUE INDEX triggers_by_dedupe_key ON triggers (dedupe_key) WHERE task_id IS NULL;

ALTER TABLE leases ADD COLUMN granted_at INTEGER;
ALTER TABLE leases ADD COLUMN took_over INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lease_claims ADD COLUMN granted_at INTEGER;
ALTER TABLE lease_claims ADD COLUMN took_over INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lease_claims ADD COLUMN released INTEGER NOT NULL DEFAULT 0;
