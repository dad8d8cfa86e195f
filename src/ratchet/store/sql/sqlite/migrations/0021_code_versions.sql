-- The version of the code a task started on (engine/code_version.py), beside its record to
-- find tasks by (`ratchet tasks --code-version`). Older tasks have none (NULL): they run as before.

ALTER TABLE tasks ADD COLUMN code_version TEXT;
