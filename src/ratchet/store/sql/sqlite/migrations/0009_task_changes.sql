-- The task-change log (ratchet.task_change): one row per task created or
-- status moved, numbered by position in the order the changes became visible
-- (the writers log them under one lock as they commit), read by the HTTP API's
-- global live stream.

CREATE TABLE task_changes (
    position    INTEGER PRIMARY KEY,
    task_id     TEXT NOT NULL,
    time        INTEGER NOT NULL,
    record      TEXT NOT NULL
) WITHOUT ROWID;
