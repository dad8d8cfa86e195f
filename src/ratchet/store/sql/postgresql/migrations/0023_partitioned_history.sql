-- The journal (operations) and the events become tables partitioned by "archive" (docs/stores.md,
-- "Partitioned history"): 0 is the live partition, where a task's rows are written while it runs;
-- a retention moves an ended task's rows to the partition of its end's day and status, and drops
-- a partition once its rule expired the whole of it, instead of deleting rows.
-- Each table in place becomes its live partition (no row is copied): it gains the column (0 in
-- every row: a new column with a constant default rewrites nothing), a primary key holding it
-- (a partitioned table's must), and is attached under a new parent of the old name; the CHECK
-- spares the attach a scan of the rows.

ALTER TABLE operations RENAME TO operations_live;
ALTER TABLE operations_live ADD COLUMN archive INTEGER NOT NULL DEFAULT 0;
ALTER TABLE operations_live DROP CONSTRAINT operations_pkey;
ALTER TABLE operations_live ADD CONSTRAINT operations_live_pkey PRIMARY KEY (task_id, seq, archive);
ALTER TABLE operations_live ADD CONSTRAINT operations_live_only CHECK (archive >= 0 AND archive < 1);
CREATE TABLE operations (LIKE operations_live INCLUDING DEFAULTS, PRIMARY KEY (task_id, seq, archive))
    PARTITION BY RANGE (archive);
ALTER TABLE operations ATTACH PARTITION operations_live FOR VALUES FROM (0) TO (1);
ALTER TABLE operations_live DROP CONSTRAINT operations_live_only;

ALTER TABLE events RENAME TO events_live;
ALTER TABLE events_live ADD COLUMN archive INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events_live DROP CONSTRAINT events_pkey;
ALTER TABLE events_live ADD CONSTRAINT events_live_pkey PRIMARY KEY (task_id, seq, archive);
ALTER TABLE events_live ADD CONSTRAINT events_live_only CHECK (archive >= 0 AND archive < 1);
CREATE TABLE events (LIKE events_live INCLUDING DEFAULTS, PRIMARY KEY (task_id, seq, archive))
    PARTITION BY RANGE (archive);
ALTER TABLE events ATTACH PARTITION events_live FOR VALUES FROM (0) TO (1);
ALTER TABLE events_live DROP CONSTRAINT events_live_only;

CREATE TABLE archived_tasks (
    task_id     TEXT PRIMARY KEY,
    archive     INTEGER NOT NULL,
    last_event  INTEGER NOT NULL
);
CREATE INDEX archived_tasks_by_archive ON archived_tasks (archive);
