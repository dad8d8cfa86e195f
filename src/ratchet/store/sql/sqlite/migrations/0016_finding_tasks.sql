-- Finding tasks (docs/finding-tasks.md). A task's model and cost become columns, its labels
-- rows of their own, and the words a search finds it by an FTS5 index (task_search, over
-- task_text, kept in step by the triggers). Every order a listing sorts by walks an index
-- that ends with the creation time and the id, so that each order is total and a page can
-- start after a row (keyset paging). The words of the tasks stored before are put by the
-- migration's runner (store/sql/task_rows.py: search_params), which reads their records.

ALTER TABLE tasks ADD COLUMN model TEXT;
ALTER TABLE tasks ADD COLUMN cost REAL NOT NULL DEFAULT 0;

-- The rows whose record could not be read when version 11 made these columns: a value to sort by.
UPDATE tasks SET name = '' WHERE name IS NULL;
UPDATE tasks SET updated_at = created_at WHERE updated_at IS NULL;

-- What each task spent, as its journal says (engine/children.py: child_spending), in the
-- column and in its record (which holds it from now on).
UPDATE tasks SET
    model = json_extract(record, '$.model'),
    cost = COALESCE((
        SELECT SUM(CASE
            WHEN o.kind = 'model' AND json_valid(o.meta)
                THEN CAST(json_extract(o.meta, '$.usage.cost') AS REAL)
            WHEN o.kind = 'child' AND json_valid(o.output)
                THEN CAST(json_extract(o.output, '$.spent.cost') AS REAL)
        END)
        FROM operations o WHERE o.task_id = tasks.id
    ), 0)
WHERE json_valid(record);
UPDATE tasks SET record = json_set(record, '$.cost', cost) WHERE cost > 0 AND json_valid(record);

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

DROP INDEX tasks_by_status;
DROP INDEX tasks_by_parent;
DROP INDEX tasks_by_created;
DROP INDEX tasks_by_name;
DROP INDEX tasks_by_agent;
CREATE INDEX tasks_by_status ON tasks (status, created_at, id);
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at, id);
CREATE INDEX tasks_by_created ON tasks (created_at, id);
CREATE INDEX tasks_by_name ON tasks (name, created_at, id);
CREATE INDEX tasks_by_agent ON tasks (agent, created_at, id);
CREATE INDEX tasks_by_updated ON tasks (updated_at, created_at, id);
CREATE INDEX tasks_by_cost ON tasks (cost, created_at, id);
