-- Each worker that says it runs, idle or not, one row a name (store/ops/workers.py):
-- written when it starts and at each heartbeat (one upsert, whatever it runs),
-- deleted when it stops gracefully, and counted as gone from expires_at on, so
-- `ratchet workers` and GET /api/workers list the idle workers a lease never named.

CREATE TABLE workers (
    name         TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    concurrency  INTEGER NOT NULL,
    lease_ttl    DOUBLE PRECISION NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
