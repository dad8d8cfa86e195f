-- A task's name, agent and last change as columns, so `ratchet tasks` and
-- GET /api/tasks filter, order and page in SQL and read only what they show,
-- never the whole record. Existing rows take theirs from the record.

ALTER TABLE tasks ADD COLUMN name TEXT;
ALTER TABLE tasks ADD COLUMN agent TEXT;
ALTER TABLE tasks ADD COLUMN updated_at BIGINT;

-- A record that is not JSON keeps NULL columns (it is listed, and `show` says what is wrong).
CREATE FUNCTION pg_temp.ratchet_json(text) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    RETURN $1::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END $$;

UPDATE tasks SET
    name = parsed.doc ->> 'name',
    agent = parsed.doc ->> 'agent',
    updated_at = (extract(epoch FROM (parsed.doc ->> 'updated_at')::timestamptz) * 1000000)::bigint
FROM (SELECT id, pg_temp.ratchet_json(record) AS doc FROM tasks) AS parsed
WHERE tasks.id = parsed.id;

CREATE INDEX tasks_by_created ON tasks (created_at, position);
CREATE INDEX tasks_by_name ON tasks (name, created_at, position);
CREATE INDEX tasks_by_agent ON tasks (agent, created_at, position);
