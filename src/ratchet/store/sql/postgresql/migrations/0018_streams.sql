-- Each task's stream (records/stream.py): what readers follow while the task runs,
-- numbered per task from 0 (position); a workflow's own value is written once per seq.

CREATE TABLE streams (
    task_id     TEXT NOT NULL,
    position    INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    seq         INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
);
CREATE UNIQUE INDEX streams_values ON streams (task_id, seq) WHERE kind = 'value';
