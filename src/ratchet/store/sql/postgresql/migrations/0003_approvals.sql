-- People's decisions on tool calls that need approval, keyed like the journal
-- by (task_id, seq): pending until a person approves (perhaps with edited
-- arguments) or denies; the record holds the call as it was shown.

CREATE TABLE approvals (
    task_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    status        TEXT NOT NULL,
    requested_at  BIGINT NOT NULL,
    record        TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE INDEX approvals_by_status ON approvals (status, requested_at);
