-- A task's name, agent and last change as columns, so `ratchet tasks` and
-- GET /api/tasks filter, order and page in SQL and read only what they show,
-- never the whole record. Existing rows take theirs from the record (the time
-- through julianday: to the millisecond, enough for a listing).

ALTER TABLE tasks ADD COLUMN name TEXT;
ALTER TABLE tasks ADD COLUMN agent TEXT;
ALTER TABLE tasks ADD COLUMN updated_at INTEGER;

UPDATE tasks SET
    name = json_extract(record, '$.name'),
    agent = json_extract(record, '$.agent'),
    updated_at = CAST(round((julianday(json_extract(record, '$.updated_at')) - 2440587.5) * 86400000000.0)
                      AS INTEGER)
WHERE json_valid(record);

CREATE INDEX tasks_by_created ON tasks (created_at);
CREATE INDEX tasks_by_name ON tasks (name, created_at);
CREATE INDEX tasks_by_agent ON tasks (agent, created_at);
