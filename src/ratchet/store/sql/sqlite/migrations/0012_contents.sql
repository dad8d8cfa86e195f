-- Content-addressed values of a task's journal: a large value that recurs in
-- its operations' inputs (a system prompt, tool schemas, each message of a
-- history) is stored once here and referenced by its hash (store/sql/content.py).
-- A list that extends an earlier one is stored as that list's hash (prev) and
-- the items it adds. Keyed per task, so deleting a task deletes its contents
-- and two tasks never share a row: no reference counts, no orphans.

CREATE TABLE contents (
    task_id     TEXT NOT NULL,
    hash        TEXT NOT NULL,
    prev        TEXT,
    body        TEXT NOT NULL,
    PRIMARY KEY (task_id, hash)
) WITHOUT ROWID;
