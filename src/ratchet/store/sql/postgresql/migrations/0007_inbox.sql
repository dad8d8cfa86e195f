-- Each task's inbox: the messages sent to it (`Runtime.send`), numbered
-- per task in the order they arrived; taken_by is the journal seq of the
-- receive that took one (NULL while it waits to be received).

CREATE TABLE inbox (
    task_id     TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    name        TEXT NOT NULL,
    sent_at     BIGINT NOT NULL,
    taken_by    INTEGER,
    record      TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
-- A receive reads the oldest message of its name no receive took yet.
CREATE INDEX inbox_pending ON inbox (task_id, name, seq) WHERE taken_by IS NULL;
