-- Daily spend caps beyond a task (store/ops/spend.py): one row a cap, by scope ('agent' or
-- 'label') and name (the agent's, or KEY=VALUE), and one row a cap and UTC day (YYYY-MM-DD)
-- holding what its tasks' priced model calls cost that day, added to in the transaction
-- that records each call, and whether its 80 % was told.

CREATE TABLE spend_caps (
    scope        TEXT NOT NULL,
    name         TEXT NOT NULL,
    daily        REAL NOT NULL,
    approve_over INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (scope, name)
) WITHOUT ROWID;

CREATE TABLE spend_days (
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    day           TEXT NOT NULL,
    spent         REAL NOT NULL,
    pressure_told INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, name, day)
) WITHOUT ROWID;
