-- A task started by another as its child names its parent; a parent's
-- children are found through the index (waiting on them, cancelling them,
-- showing the tree).

ALTER TABLE tasks ADD COLUMN parent_id TEXT;
CREATE INDEX tasks_by_parent ON tasks (parent_id, created_at);
