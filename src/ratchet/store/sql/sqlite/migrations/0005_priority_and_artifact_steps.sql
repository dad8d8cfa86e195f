-- A task keeps its priority (lower first; triggers put without one take it)
-- and workers claim due triggers by priority first, then time: the index
-- leads with priority so a claim reads due work in that order, and
-- triggers_by_time serves the earliest fire_at a sleeping worker waits for.
-- Artifacts record the index of the step that made them.

ALTER TABLE tasks ADD COLUMN priority INTEGER NOT NULL DEFAULT 5;
DROP INDEX triggers_by_due;
CREATE INDEX triggers_by_due ON triggers (priority, fire_at, id);
CREATE INDEX triggers_by_time ON triggers (fire_at);
ALTER TABLE artifacts ADD COLUMN step INTEGER;
