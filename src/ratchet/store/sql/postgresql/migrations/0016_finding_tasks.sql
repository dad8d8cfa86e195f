-- Finding tasks (docs/finding-tasks.md). A task's model and cost become columns, its labels
-- rows of their own, and the words a search finds it by a tsvector with a GIN index
-- (task_text). Every order a listing sorts by walks an index that ends with the creation
-- time and the id, so that each order is total and a page can start after a row (keyset
-- paging); names and ids in code-point order (COLLATE "C"), as on SQLite and in Python. The
-- words of the tasks stored before are put by the migration's runner (store/sql/task_rows.py:
-- search_params), which reads their records.

ALTER TABLE tasks ADD COLUMN model TEXT;
ALTER TABLE tasks ADD COLUMN cost DOUBLE PRECISION NOT NULL DEFAULT 0;

-- The rows whose record could not be read when version 11 made these columns: a value to sort by.
UPDATE tasks SET name = '' WHERE name IS NULL;
UPDATE tasks SET updated_at = created_at WHERE updated_at IS NULL;

-- A value that is not JSON is NULL here (its row keeps its columns as they are).
CREATE OR REPLACE FUNCTION pg_temp.ratchet_json(text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN $1::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

CREATE FUNCTION pg_temp.ratchet_number(jsonb) RETURNS double precision LANGUAGE plpgsql AS $$
BEGIN
    RETURN ($1 #>> '{}')::double precision;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

-- What each task spent, as its journal says (engine/children.py: child_spending), in the
-- column and in its record (which holds it from now on).
UPDATE tasks SET
    model = parsed.doc ->> 'model',
    cost = COALESCE((
        SELECT SUM(CASE
            WHEN o.kind = 'model' THEN pg_temp.ratchet_number(pg_temp.ratchet_json(o.meta) #> '{usage,cost}')
            WHEN o.kind = 'child' THEN pg_temp.ratchet_number(pg_temp.ratchet_json(o.output) #> '{spent,cost}')
        END)
        FROM operations o WHERE o.task_id = tasks.id
    ), 0)
FROM (SELECT id, pg_temp.ratchet_json(record) AS doc FROM tasks) AS parsed
WHERE tasks.id = parsed.id AND parsed.doc IS NOT NULL;
UPDATE tasks SET record = (record::jsonb || jsonb_build_object('cost', cost))::text WHERE cost > 0;

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

DROP INDEX tasks_by_status;
DROP INDEX tasks_by_parent;
DROP INDEX tasks_by_created;
DROP INDEX tasks_by_name;
DROP INDEX tasks_by_agent;
CREATE INDEX tasks_by_status ON tasks (status, created_at, id COLLATE "C");
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at, id COLLATE "C");
CREATE INDEX tasks_by_created ON tasks (created_at, id COLLATE "C");
CREATE INDEX tasks_by_name ON tasks (name COLLATE "C", created_at, id COLLATE "C");
CREATE INDEX tasks_by_agent ON tasks (agent, created_at, id COLLATE "C");
CREATE INDEX tasks_by_updated ON tasks (updated_at, created_at, id COLLATE "C");
CREATE INDEX tasks_by_cost ON tasks (cost, created_at, id COLLATE "C");
CREATE INDEX tasks_by_id ON tasks (id COLLATE "C");
