-- The task-change log (ratchet.task_change): one row per task created or
-- status moved, numbered by position in the order the changes became visible
-- (the writers log them under one lock as they commit), read by the HTTP API's
-- global live stream.

CREATE TABLE task_changes (
    position    BIGINT PRIMARY KEY,
    task_id     TEXT NOT NULL,
    time        BIGINT NOT NULL,
    record      TEXT NOT NULL
);
