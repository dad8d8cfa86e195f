-- Triggers of one task coalesce: one queued trigger per task and kind (the
-- earliest time and most urgent priority of those queued are kept, on the
-- oldest row); dedupe keys now matter only for triggers of no task. Lease
-- claims keep when they were granted, whether they took over a live lease,
-- and how they ended.

UPDATE triggers AS t SET fire_at = m.fire_at, priority = m.priority
FROM (
    SELECT MIN(id) AS id, MIN(fire_at) AS fire_at, MIN(priority) AS priority
    FROM triggers WHERE task_id IS NOT NULL GROUP BY task_id, kind
) AS m
WHERE t.id = m.id;
DELETE FROM triggers AS t
WHERE t.task_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM triggers u WHERE u.task_id = t.task_id AND u.kind = t.kind AND u.id < t.id
);
ALTER TABLE triggers DROP CONSTRAINT triggers_dedupe_key_unique;
DROP INDEX triggers_by_task;
CREATE UNIQUE INDEX triggers_one_per_task_kind ON triggers (task_id, kind) WHERE task_id IS NOT NULL;
CREATE UNIQUE INDEX triggers_by_dedupe_key ON triggers (dedupe_key) WHERE task_id IS NULL;

ALTER TABLE leases ADD COLUMN granted_at BIGINT;
ALTER TABLE leases ADD COLUMN took_over BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE lease_claims ADD COLUMN granted_at BIGINT;
ALTER TABLE lease_claims ADD COLUMN took_over BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE lease_claims ADD COLUMN released BOOLEAN NOT NULL DEFAULT FALSE;
