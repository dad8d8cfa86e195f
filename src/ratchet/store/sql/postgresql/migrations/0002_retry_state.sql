-- Tasks say what a waiting task waits on, so workers can find the ones to
-- resume without reading every record. The journal keeps retry state: an
-- operation that failed and will be tried again records when
-- (next_attempt_at); error_type names the failure's class; meta holds what
-- the call reported besides its output (usage, ordinal).

ALTER TABLE operations ADD COLUMN error_type TEXT;
ALTER TABLE operations ADD COLUMN next_attempt_at BIGINT;
ALTER TABLE operations ADD COLUMN meta TEXT NOT NULL DEFAULT '{}';

ALTER TABLE tasks ADD COLUMN waiting_on TEXT;
