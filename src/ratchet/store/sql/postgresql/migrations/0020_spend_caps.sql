-- Daily spend caps beyond a task (store/ops/spend.py): one row a cap, by scope ('agent' or
-- 'label') and name (the agent's, or KEY=VALUE), and one row a cap and UTC day (YYYY-MM-DD)
-- holding what its tasks' priced model calls cost that day, added to in the transaction
-- that records each call, and whether its 80 % was told.

CREATE TABLE spend_caps (
    scope        TEXT NOT NULL,
    name         TEXT NOT NULL,
    daily        DOUBLE PRECISION NOT NULL,
    approve_over BOOLEAN NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (scope, name)
);

CREATE TABLE spend_days (
    scope         TEXT NOT NULL,
    name          TEXT NOT NULL,
    day           TEXT NOT NULL,
    spent         DOUBLE PRECISION NOT NULL,
    pressure_told BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (scope, name, day)
);
