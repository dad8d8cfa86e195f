-- Named queries of the PostgreSQL store. Each begins with a line "-- name: NAME".
-- Parameters are named (%(name)s); times are integer microseconds since the epoch.
-- Notifications name what changed: "triggers" on channel ratchet_triggers,
-- "events:TASK_ID" on ratchet_events, "streams:TASK_ID" on ratchet_streams; they are delivered when the transaction commits.
-- The SQLite catalogue has a query of every name used by the store's
-- operations (store/sql/ops.py), doing the same in its own dialect.

-- name: begin_write
BEGIN ISOLATION LEVEL READ COMMITTED

-- name: begin_read
BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY

-- name: commit
COMMIT

-- name: rollback
ROLLBACK

-- A write transaction that joins another's group commit runs in a savepoint (store/group_commit.py),
-- which stays until the commit; rolling back to it finds the newest of the name.
-- name: savepoint
SAVEPOINT ratchet_member

-- name: rollback_to_savepoint
ROLLBACK TO SAVEPOINT ratchet_member

-- name: listen_triggers
LISTEN ratchet_triggers

-- name: listen_events
LISTEN ratchet_events

-- name: listen_tasks
LISTEN ratchet_tasks

-- name: listen_streams
LISTEN ratchet_streams

-- name: server_timeline
-- Where a new connection landed (failover.py): the server's WAL timeline, in hex (a promoted
-- standby starts a new one; any user may read it; NULL on a standby, which writes no WAL of its
-- own), whether it replicates synchronously, and its port.
SELECT CASE WHEN pg_is_in_recovery() THEN NULL
            ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END,
       current_setting('synchronous_standby_names'),
       current_setting('synchronous_commit'),
       inet_server_port()

-- name: lock_migrations
SELECT pg_advisory_xact_lock(7316425586001286601)

-- name: create_version_table
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     INTEGER PRIMARY KEY,
    applied_at  BIGINT NOT NULL
)

-- name: schema_version
SELECT COALESCE(MAX(version), 0) FROM ratchet_schema_version

-- name: list_schema_versions
SELECT version FROM ratchet_schema_version

-- name: record_version
INSERT INTO ratchet_schema_version (version, applied_at) VALUES (%(version)s, %(applied_at)s)

-- name: list_tables
SELECT table_name FROM information_schema.tables
WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'

-- name: current_schema
SELECT current_schema()

-- name: replica_staleness
-- A read replica's lag, in seconds, as a listing read on it begins (docs/stores.md, "Read replicas").
-- 0 on a server that is no replica, and on one that has replayed all the WAL it received: an idle
-- primary sends nothing, and the age of its last commit is no lag. Else the age of the last commit
-- replayed: every commit older than that is visible. NULL when it cannot tell (nothing replayed yet).
SELECT CASE
    WHEN NOT pg_is_in_recovery() THEN 0
    WHEN pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn() THEN 0
    ELSE GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp()))
END::float8

-- name: backend_pid
-- The server process a statement ran on: behind a transaction pooler, not always the same for one
-- connection (store/sql/postgresql/pooling.py).
SELECT pg_backend_pid()

-- name: check_fence
-- Driver.check: true when the lease (task_id, token) is current; else it raises SQLSTATE RLOST
-- (migration 0012), so the driver sends it with the transaction's next statement, unread.
-- It holds the lease row FOR SHARE until the commit: no claim can replace the lease before.
SELECT ratchet_check_fence(%s, %s)

-- name: lock_sequence
SELECT pg_advisory_xact_lock(hashtextextended(%(key)s, 0))

-- name: insert_task
INSERT INTO tasks (id, status, waiting_on, created_at, record, priority, parent_id, name, agent, updated_at,
                   model, cost, queue_name, queue_partition, code_version)
VALUES (%(id)s, %(status)s, %(waiting_on)s, %(created_at)s, %(record)s, %(priority)s, %(parent_id)s,
        %(name)s, %(agent)s, %(updated_at)s, %(model)s, %(cost)s, %(queue_name)s, %(queue_partition)s,
        %(code_version)s)
ON CONFLICT (id) DO NOTHING

-- name: get_task
SELECT id, status, record FROM tasks WHERE id = %(id)s

-- name: get_tasks
SELECT id, status, record FROM tasks WHERE id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb))

-- name: get_task_locked
SELECT id, status, record FROM tasks WHERE id = %(id)s FOR NO KEY UPDATE

-- The lease row, exclusively: a fenced transaction's check_fence (FOR SHARE) waits for it.
-- name: hold_run
SELECT 1 FROM leases WHERE task_id = %(task_id)s FOR UPDATE

-- name: lock_task
SELECT status, waiting_on FROM tasks WHERE id = %(id)s FOR UPDATE

-- name: list_tasks
SELECT id, status, record FROM tasks ORDER BY created_at, position LIMIT %(limit)s

-- name: list_children
SELECT id, status, record FROM tasks WHERE parent_id = %(parent_id)s ORDER BY created_at, position

-- name: list_tasks_by_status
SELECT id, status, record FROM tasks WHERE status = %(status)s
ORDER BY created_at, position LIMIT %(limit)s

-- name: update_task
UPDATE tasks SET status = %(status)s, waiting_on = %(waiting_on)s, record = %(record)s,
                 priority = %(priority)s, name = %(name)s, agent = %(agent)s, updated_at = %(updated_at)s,
                 model = %(model)s, cost = %(cost)s,
                 code_version = %(code_version)s
WHERE id = %(id)s

-- name: list_orphaned_tasks
SELECT t.id, t.status, t.record FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
WHERE (t.status IN ('queued', 'running') OR (t.status = 'waiting' AND t.waiting_on IN ('timer', 'limit'))
       OR (t.status = 'waiting' AND t.waiting_on = 'children' AND NOT EXISTS (
           SELECT 1 FROM tasks c WHERE c.parent_id = t.id
             AND c.status NOT IN ('completed', 'failed', 'cancelled'))))
  AND (l.task_id IS NULL OR l.released OR l.expires_at <= %(now)s)
  AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
ORDER BY t.priority, t.created_at, t.position
LIMIT %(limit)s

-- name: delete_steps
DELETE FROM steps WHERE task_id = %(task_id)s

-- name: insert_step
INSERT INTO steps (task_id, idx, status, record)
VALUES (%(task_id)s, %(idx)s, %(status)s, %(record)s)

-- name: lock_step
SELECT status FROM steps WHERE task_id = %(task_id)s AND idx = %(idx)s FOR UPDATE

-- name: update_step
UPDATE steps SET status = %(status)s, record = %(record)s
WHERE task_id = %(task_id)s AND idx = %(idx)s

-- name: list_steps
SELECT idx, record FROM steps WHERE task_id = %(task_id)s ORDER BY idx

-- name: record_op_started
-- The journal's two writes take an operation's row positionally (rows.OP_COLUMNS order):
-- they run on every journaled call, and binding by position is the cheaper way.
-- Raises SQLSTATE RNONE when it writes nothing (the row already succeeded), so the driver
-- may send it with the commit, unread (migration 0012).
-- The row goes to the live partition (archive 0, the column's default; migration 0023): a task's
-- journal is written under its lease, and only an ended task no lease holds is archived.
WITH written AS (
    INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                            input, output, error, started_at, finished_at, error_type,
                            next_attempt_at, meta)
    VALUES (%s, %s, %s, %s, %s, %s, %s,
            %s, %s, %s, %s, %s, %s, %s,
            %s)
    ON CONFLICT (task_id, seq, archive) DO UPDATE SET
        kind = excluded.kind, name = excluded.name, attempt = excluded.attempt,
        idempotency_key = excluded.idempotency_key, status = 'started', input = excluded.input,
        output = NULL, error = NULL, started_at = excluded.started_at, finished_at = NULL,
        error_type = NULL, next_attempt_at = NULL, meta = excluded.meta
    WHERE operations.status <> 'succeeded'
    RETURNING 1
)
SELECT ratchet_expect_written(count(*)) FROM written

-- name: record_op_finished
-- One statement whether or not an intent row is there (a read-only call writes none).
-- A later attempt than the row's brings its own start; the same attempt keeps the start its intent wrote.
WITH written AS (
    INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                            input, output, error, started_at, finished_at, error_type,
                            next_attempt_at, meta)
    VALUES (%s, %s, %s, %s, %s, %s, %s,
            %s, %s, %s, %s, %s, %s, %s,
            %s)
    ON CONFLICT (task_id, seq, archive) DO UPDATE SET
        attempt = excluded.attempt, status = excluded.status, output = excluded.output,
        error = excluded.error, finished_at = excluded.finished_at, error_type = excluded.error_type,
        next_attempt_at = excluded.next_attempt_at, meta = excluded.meta,
        started_at = CASE WHEN operations.attempt = excluded.attempt
                          THEN operations.started_at ELSE excluded.started_at END
    WHERE operations.status <> 'succeeded'
    RETURNING 1
)
SELECT ratchet_expect_written(count(*)) FROM written

-- name: get_op
SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
       started_at, finished_at, error_type, next_attempt_at, meta
FROM operations WHERE task_id = %(task_id)s AND seq = %(seq)s

-- name: list_ops
-- A task's journal in the live partition, where a task that may still run has all of it (the
-- planner reads that partition alone); then a row of NULLs if the task was archived (migration
-- 0023), which SqlOps reads as "read list_ops_archived instead": every partition.
(SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
        started_at, finished_at, error_type, next_attempt_at, meta
 FROM operations WHERE task_id = %(task_id)s AND archive = 0 AND seq > %(after_seq)s
 ORDER BY seq LIMIT %(limit)s)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM archived_tasks WHERE task_id = %(task_id)s)

-- name: list_ops_archived
SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
       started_at, finished_at, error_type, next_attempt_at, meta
FROM operations WHERE task_id = %(task_id)s AND seq > %(after_seq)s ORDER BY seq LIMIT %(limit)s

-- name: count_ops
SELECT COUNT(*) FROM operations WHERE task_id = %(task_id)s

-- name: count_events
SELECT COUNT(*) FROM events WHERE task_id = %(task_id)s

-- name: next_message_seq
SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE thread_id = %(thread_id)s

-- name: insert_message
INSERT INTO messages (thread_id, seq, record) VALUES (%(thread_id)s, %(seq)s, %(record)s)

-- name: list_messages
SELECT record FROM messages
WHERE thread_id = %(thread_id)s AND seq >= %(start)s AND seq < %(end)s ORDER BY seq

-- name: append_event
-- Into the live partition (archive 0), numbered after the task's newest event there, or (none
-- there: an event for an archived task, such as "retried") after the last one archived: the
-- planner reads the live partition alone, and the small archived_tasks only when it found none.
WITH added AS (
    INSERT INTO events (task_id, seq, time, kind, severity, message, display_message, data)
    VALUES (%(task_id)s,
            COALESCE((SELECT MAX(seq) FROM events WHERE task_id = %(task_id)s AND archive = 0),
                     (SELECT last_event FROM archived_tasks WHERE task_id = %(task_id)s), 0) + 1,
            %(time)s, %(kind)s, %(severity)s, %(message)s, %(display_message)s, %(data)s)
    RETURNING seq
)
SELECT seq, pg_notify('ratchet_events', 'events:' || %(task_id)s) FROM added

-- name: list_events
-- Read as list_ops is: the live partition, then a row of NULLs for an archived task.
(SELECT task_id, seq, time, kind, severity, message, display_message, data
 FROM events WHERE task_id = %(task_id)s AND archive = 0 AND seq > %(after_seq)s
   AND (CAST(%(kinds)s AS jsonb) IS NULL OR kind IN (SELECT jsonb_array_elements_text(CAST(%(kinds)s AS jsonb))))
 ORDER BY seq LIMIT %(limit)s)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM archived_tasks WHERE task_id = %(task_id)s)

-- name: list_events_archived
SELECT task_id, seq, time, kind, severity, message, display_message, data
FROM events WHERE task_id = %(task_id)s AND seq > %(after_seq)s
  AND (CAST(%(kinds)s AS jsonb) IS NULL OR kind IN (SELECT jsonb_array_elements_text(CAST(%(kinds)s AS jsonb))))
ORDER BY seq LIMIT %(limit)s

-- name: last_events
(SELECT * FROM (
    SELECT task_id, seq, time, kind, severity, message, display_message, data
    FROM events WHERE task_id = %(task_id)s AND archive = 0 ORDER BY seq DESC LIMIT %(count)s
) AS newest ORDER BY seq)
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
WHERE EXISTS (SELECT 1 FROM archived_tasks WHERE task_id = %(task_id)s)

-- name: last_events_archived
SELECT * FROM (
    SELECT task_id, seq, time, kind, severity, message, display_message, data
    FROM events WHERE task_id = %(task_id)s ORDER BY seq DESC LIMIT %(count)s
) AS newest ORDER BY seq

-- name: insert_artifact
INSERT INTO artifacts (id, task_id, type, summary, bytes, created_at, content, step)
VALUES (%(id)s, %(task_id)s, %(type)s, %(summary)s, %(bytes)s, %(created_at)s, %(content)s,
        %(step)s)
ON CONFLICT (id) DO NOTHING

-- name: get_artifact
SELECT id, task_id, type, summary, bytes, created_at, step FROM artifacts WHERE id = %(id)s

-- name: read_artifact
SELECT substring(content FROM %(offset)s::integer + 1 FOR %(length)s::integer)
FROM artifacts WHERE id = %(id)s

-- name: list_artifacts
SELECT id, task_id, type, summary, bytes, created_at, step FROM artifacts
WHERE task_id = %(task_id)s ORDER BY created_at, position

-- name: put_task_trigger
-- A task's trigger of a kind already queued absorbs this one: the earlier time
-- and the lower priority number win. A trigger put without a priority takes its task's.
WITH put AS (
    INSERT INTO triggers AS g (fire_at, priority, task_id, session_id, kind, payload, dedupe_key)
    VALUES (%(fire_at)s,
            COALESCE(%(priority)s::integer, (SELECT t.priority FROM tasks t WHERE t.id = %(task_id)s),
                     %(default_priority)s),
            %(task_id)s, %(session_id)s, %(kind)s, %(payload)s, %(dedupe_key)s)
    ON CONFLICT (task_id, kind) WHERE task_id IS NOT NULL DO UPDATE SET
        fire_at = LEAST(g.fire_at, excluded.fire_at),
        priority = LEAST(g.priority, excluded.priority)
    RETURNING id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
)
SELECT put.* FROM put, LATERAL (SELECT pg_notify('ratchet_triggers', 'triggers')) AS notified

-- name: insert_trigger
WITH added AS (
    INSERT INTO triggers (fire_at, priority, task_id, session_id, kind, payload, dedupe_key)
    VALUES (%(fire_at)s, COALESCE(%(priority)s::integer, %(default_priority)s), NULL,
            %(session_id)s, %(kind)s, %(payload)s, %(dedupe_key)s)
    ON CONFLICT (dedupe_key) WHERE task_id IS NULL DO NOTHING
    RETURNING id
)
SELECT id, pg_notify('ratchet_triggers', 'triggers') FROM added

-- name: get_trigger_by_dedupe_key
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers WHERE dedupe_key = %(dedupe_key)s AND task_id IS NULL

-- name: next_due_at
SELECT MIN(fire_at) FROM triggers

-- name: count_tasks_by_status
SELECT status, COUNT(*) FROM tasks GROUP BY status

-- name: due_trigger_summary
SELECT COUNT(*), MIN(fire_at) FROM triggers WHERE fire_at <= %(now)s

-- name: claim_due_triggers
-- Among the due triggers, the most urgent first; of equal priority, the one due longest.
DELETE FROM triggers WHERE id IN (
    SELECT id FROM triggers WHERE fire_at <= %(now)s ORDER BY priority, fire_at, id
    LIMIT %(limit)s FOR UPDATE SKIP LOCKED
)
RETURNING id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key

-- name: list_triggers
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers ORDER BY fire_at, priority, id

-- name: list_task_triggers
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers WHERE task_id = %(task_id)s ORDER BY fire_at, priority, id

-- name: delete_triggers
DELETE FROM triggers WHERE task_id = %(task_id)s

-- name: delete_trigger
DELETE FROM triggers WHERE id = %(id)s

-- name: update_trigger
UPDATE triggers SET fire_at = %(fire_at)s, payload = %(payload)s WHERE id = %(id)s

-- name: next_checkpoint_number
SELECT COALESCE(MAX(number), 0) + 1 FROM checkpoints WHERE task_id = %(task_id)s

-- name: insert_checkpoint
INSERT INTO checkpoints (task_id, number, created_at, record)
VALUES (%(task_id)s, %(number)s, %(created_at)s, %(record)s)

-- name: get_checkpoint
SELECT record FROM checkpoints WHERE task_id = %(task_id)s AND number = %(number)s

-- name: latest_checkpoint
SELECT record FROM checkpoints WHERE task_id = %(task_id)s ORDER BY number DESC LIMIT 1

-- name: list_checkpoints
SELECT record FROM checkpoints WHERE task_id = %(task_id)s ORDER BY number

-- name: list_checkpoint_ages
SELECT task_id, number, created_at FROM checkpoints ORDER BY task_id, number DESC

-- name: list_task_checkpoint_ages
SELECT task_id, number, created_at FROM checkpoints WHERE task_id = %(task_id)s
ORDER BY number DESC

-- name: delete_checkpoint
DELETE FROM checkpoints WHERE task_id = %(task_id)s AND number = %(number)s

-- name: get_session
SELECT record FROM sessions WHERE id = %(id)s

-- name: insert_session
INSERT INTO sessions (id, version, updated_at, record)
VALUES (%(id)s, %(version)s, %(updated_at)s, %(record)s)
ON CONFLICT (id) DO NOTHING

-- name: update_session
UPDATE sessions SET version = %(version)s, updated_at = %(updated_at)s, record = %(record)s
WHERE id = %(id)s AND version = %(expected_version)s

-- name: list_sessions
SELECT record FROM sessions ORDER BY updated_at DESC, id

-- name: held_leases
-- Every lease not released (live or expired): who holds which task (`ratchet serve`'s workers).
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM leases WHERE NOT released ORDER BY owner COLLATE "C", task_id COLLATE "C"

-- name: get_lease
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM leases WHERE task_id = %(task_id)s

-- name: claim_lease
-- Granted when the task has no lease, or its lease was released, expired or
-- is taken over (took_over says whether it was still live): any lease, or only
-- the one whose token is given as replacing; a concurrent first
-- claim of the task waits on the key and then finds a live lease. No row comes
-- back when the claim is refused.
WITH granted AS (
    INSERT INTO leases AS l (task_id, owner, host, pid, pid_space, pid_started, token, expires_at,
                             released, granted_at, took_over)
    VALUES (%(task_id)s, %(owner)s, %(host)s, %(pid)s, %(pid_space)s, %(pid_started)s, 1,
            %(expires_at)s, FALSE, %(now)s, FALSE)
    ON CONFLICT (task_id) DO UPDATE SET
        owner = excluded.owner, host = excluded.host, pid = excluded.pid,
        pid_space = excluded.pid_space, pid_started = excluded.pid_started, token = l.token + 1, expires_at = excluded.expires_at, released = FALSE,
        granted_at = excluded.granted_at, renewed_at = NULL,
        took_over = NOT l.released AND l.expires_at > excluded.granted_at
    WHERE l.released OR l.expires_at <= excluded.granted_at OR %(take_over)s
          OR l.token = %(replacing)s::bigint
    RETURNING task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released,
              granted_at, took_over
)
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over
FROM granted

-- name: claim_tasks
-- The orphans of list_orphaned_tasks (but those whose queue is full), each task row locked so no other claimer
-- takes it meanwhile (rows locked already are skipped), leased in the same
-- statement. A lease row someone holds (a writer it fences, another claim) is
-- skipped too rather than waited for: waiting while holding task rows could
-- deadlock with a writer that holds the lease row and wants its task row. A
-- first lease that appeared since the statement began is left alone. Each row
-- is the lease, then the task's place in line (priority, created_at, position).
WITH candidates AS (
    SELECT t.id, t.priority, t.created_at, t.position FROM tasks t
    LEFT JOIN leases l ON l.task_id = t.id
    WHERE (t.status IN ('queued', 'running') OR (t.status = 'waiting' AND t.waiting_on IN ('timer', 'limit'))
           OR (t.status = 'waiting' AND t.waiting_on = 'children' AND NOT EXISTS (
               SELECT 1 FROM tasks c WHERE c.parent_id = t.id
                 AND c.status NOT IN ('completed', 'failed', 'cancelled'))))
      AND (l.task_id IS NULL OR l.released OR l.expires_at <= %(now)s)
      AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
      AND t.id NOT IN (SELECT jsonb_array_elements_text(%(skip)s::jsonb))
      AND (t.queue_name IS NULL OR NOT EXISTS (
          SELECT 1 FROM limits m WHERE m.key = 'queue:' || t.queue_name AND m.concurrency <= (
              SELECT COUNT(*) FROM tasks o JOIN leases ol ON ol.task_id = o.id
              WHERE o.queue_name = t.queue_name AND o.queue_partition IS NOT DISTINCT FROM t.queue_partition
                AND NOT ol.released AND ol.expires_at > %(now)s)))
    ORDER BY t.priority, t.created_at, t.position
    LIMIT %(limit)s
    FOR UPDATE OF t SKIP LOCKED
), lapsed AS (
    SELECT l.task_id FROM leases l JOIN candidates c ON c.id = l.task_id
    WHERE l.released OR l.expires_at <= %(now)s
    FOR UPDATE OF l SKIP LOCKED
), renewed AS (
    UPDATE leases AS l SET
        owner = %(owner)s, host = %(host)s, pid = %(pid)s, pid_space = %(pid_space)s,
        pid_started = %(pid_started)s, token = l.token + 1, expires_at = %(expires_at)s,
        released = FALSE, granted_at = %(now)s, took_over = FALSE, renewed_at = NULL
    FROM lapsed
    WHERE l.task_id = lapsed.task_id AND (l.released OR l.expires_at <= %(now)s)
    RETURNING l.task_id, l.owner, l.token, l.expires_at, l.host, l.pid, l.pid_space, l.pid_started,
              l.released, l.granted_at, l.took_over
), first AS (
    INSERT INTO leases (task_id, owner, host, pid, pid_space, pid_started, token, expires_at, released,
                        granted_at, took_over)
    SELECT c.id, %(owner)s, %(host)s, %(pid)s, %(pid_space)s, %(pid_started)s, 1, %(expires_at)s,
           FALSE, %(now)s, FALSE
    FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM leases l WHERE l.task_id = c.id)
    ON CONFLICT (task_id) DO NOTHING
    RETURNING task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released,
              granted_at, took_over
), granted AS (
    SELECT * FROM renewed UNION ALL SELECT * FROM first
)
SELECT g.task_id, g.owner, g.token, g.expires_at, g.host, g.pid, g.pid_space, g.pid_started,
       g.released, g.granted_at, g.took_over, c.priority, c.created_at, c.position
FROM granted g JOIN candidates c ON c.id = g.task_id
ORDER BY c.priority, c.created_at, c.position

-- name: record_lease_claim
INSERT INTO lease_claims (task_id, token, owner, host, pid, pid_space, pid_started, expires_at,
                          granted_at, took_over)
VALUES (%(task_id)s, %(token)s, %(owner)s, %(host)s, %(pid)s, %(pid_space)s, %(pid_started)s,
        %(expires_at)s, %(granted_at)s, %(took_over)s)

-- name: held_orphans
-- The live leases held from one host and PID space on the tasks list_orphaned_tasks
-- would return but for those leases, in its order.
SELECT l.task_id, l.owner, l.token, l.expires_at, l.host, l.pid, l.pid_space, l.pid_started,
       l.released, l.granted_at, l.took_over, l.renewed_at
FROM tasks t
JOIN leases l ON l.task_id = t.id
WHERE (t.status IN ('queued', 'running') OR (t.status = 'waiting' AND t.waiting_on IN ('timer', 'limit'))
       OR (t.status = 'waiting' AND t.waiting_on = 'children' AND NOT EXISTS (
           SELECT 1 FROM tasks c WHERE c.parent_id = t.id
             AND c.status NOT IN ('completed', 'failed', 'cancelled'))))
  AND NOT l.released AND l.expires_at > %(now)s AND l.host = %(host)s
  AND l.pid_space = %(pid_space)s
  AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
ORDER BY t.priority, t.created_at, t.position

-- name: renew_lease
UPDATE leases SET expires_at = %(expires_at)s, renewed_at = %(renewed_at)s
WHERE task_id = %(task_id)s AND token = %(token)s AND NOT released

-- name: renew_lease_claim
UPDATE lease_claims SET expires_at = %(expires_at)s, renewed_at = %(renewed_at)s
WHERE task_id = %(task_id)s AND token = %(token)s

-- name: release_lease
WITH ended AS (
    UPDATE leases SET released = TRUE
    WHERE task_id = %(task_id)s AND token = %(token)s AND NOT released
    RETURNING token
)
SELECT token, pg_notify('ratchet_triggers', 'triggers') FROM ended

-- name: release_lease_claim
-- The claim ends now, or when it expired if that was earlier.
UPDATE lease_claims SET released = TRUE, expires_at = LEAST(expires_at, %(now)s)
WHERE task_id = %(task_id)s AND token = %(token)s

-- name: lease_history
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM lease_claims WHERE task_id = %(task_id)s ORDER BY token

-- name: record_worker
-- A worker starting, or its heartbeat: its row, replaced whole.
INSERT INTO workers (name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at)
VALUES (%(name)s, %(host)s, %(pid)s, %(concurrency)s, %(lease_ttl)s, %(started_at)s, %(heartbeat_at)s,
        %(expires_at)s)
ON CONFLICT (name) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, concurrency = excluded.concurrency,
    lease_ttl = excluded.lease_ttl, started_at = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at

-- name: remove_worker
DELETE FROM workers WHERE name = %(name)s

-- name: list_workers
SELECT name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at
FROM workers WHERE expires_at > %(now)s ORDER BY name COLLATE "C"

-- name: forget_workers
DELETE FROM workers WHERE expires_at <= %(now)s

-- name: insert_approval
INSERT INTO approvals (task_id, seq, status, requested_at, record)
VALUES (%(task_id)s, %(seq)s, %(status)s, %(requested_at)s, %(record)s)
ON CONFLICT (task_id, seq) DO NOTHING

-- name: get_approval
SELECT task_id, seq, status, record FROM approvals WHERE task_id = %(task_id)s AND seq = %(seq)s

-- name: update_approval
UPDATE approvals SET status = %(status)s, record = %(record)s
WHERE task_id = %(task_id)s AND seq = %(seq)s AND status = 'pending'

-- name: list_approvals
SELECT task_id, seq, status, record FROM approvals
WHERE (%(task_id)s::text IS NULL OR task_id = %(task_id)s::text)
  AND (%(status)s::text IS NULL OR status = %(status)s::text)
ORDER BY requested_at, task_id, seq

-- name: next_inbox_seq
SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE task_id = %(task_id)s

-- name: insert_inbox_message
INSERT INTO inbox (task_id, seq, name, sent_at, taken_by, record)
VALUES (%(task_id)s, %(seq)s, %(name)s, %(sent_at)s, NULL, %(record)s)

-- name: pending_inbox_messages
SELECT record FROM inbox
WHERE task_id = %(task_id)s AND name = %(name)s AND taken_by IS NULL
ORDER BY seq LIMIT %(limit)s

-- name: take_inbox_message
UPDATE inbox SET taken_by = %(taken_by)s, record = %(record)s
WHERE task_id = %(task_id)s AND seq = %(seq)s AND taken_by IS NULL

-- name: list_inbox
SELECT record FROM inbox
WHERE task_id = %(task_id)s AND (NOT %(pending_only)s OR taken_by IS NULL)
ORDER BY seq

-- name: next_stream_offset
SELECT COALESCE(MAX(position) + 1, 0) FROM streams WHERE task_id = %(task_id)s

-- name: task_exists
SELECT 1 FROM tasks WHERE id = %(id)s

-- name: stream_value
SELECT record FROM streams WHERE task_id = %(task_id)s AND kind = 'value' AND seq = %(seq)s

-- name: insert_stream_entry
INSERT INTO streams (task_id, position, kind, seq, record)
VALUES (%(task_id)s, %(offset)s, %(kind)s, %(seq)s, %(record)s)

-- name: notify_stream
SELECT pg_notify('ratchet_streams', 'streams:' || %(task_id)s)

-- name: read_stream
SELECT record FROM streams
WHERE task_id = %(task_id)s AND position >= %(from_offset)s
ORDER BY position LIMIT %(limit)s

-- name: insert_grant
INSERT INTO task_grants (task_id, agent, granted_by, granted_at)
VALUES (%(task_id)s, %(agent)s, %(granted_by)s, %(granted_at)s)
ON CONFLICT (task_id, agent) DO NOTHING

-- name: list_grants
SELECT agent, granted_by, granted_at FROM task_grants
WHERE task_id = %(task_id)s ORDER BY granted_at, agent

-- name: next_task_change_position
SELECT COALESCE(MAX(position), 0) + 1 FROM task_changes

-- name: insert_task_change
INSERT INTO task_changes (position, task_id, time, record)
VALUES (%(position)s, %(task_id)s, %(time)s, %(record)s)

-- name: notify_task_changes
SELECT pg_notify('ratchet_tasks', 'tasks')

-- name: list_task_changes
SELECT position, record FROM task_changes WHERE position > %(after)s ORDER BY position LIMIT %(limit)s

-- name: last_task_change
SELECT MAX(position) FROM task_changes

-- The task listing (store/sql/task_rows.py): a query is made of the blocks below, joined in
-- order (catalogue: NAME+NAME+...): a select (the rows or their count), the rows it starts
-- from (its leading filter, whose index it walks), a condition for each other filter given,
-- then for a page the place it starts after, its order and its limit. Names and ids
-- compare by code point (COLLATE "C"), as on SQLite and in Python, whatever the database's
-- collation; their indexes are made so.

-- name: task_rows_select
SELECT t.id, t.name, t.status, t.waiting_on, t.agent, t.parent_id, t.created_at, t.updated_at,
       t.model, t.cost

-- name: task_rows_count
SELECT COUNT(*)

-- Every task, walked in the order's own index (tasks_by_created, _by_updated, _by_name, ...).
-- name: task_rows_from_all
FROM tasks t WHERE TRUE

-- The words are a JSON array of words (letters and digits only); each starts a word of the task.
-- name: task_rows_from_text
FROM task_text x JOIN tasks t ON t.id = x.task_id
WHERE x.words @@ (SELECT string_agg(quote_literal(word) || ':*', ' & ')
                  FROM jsonb_array_elements_text(%(words)s::jsonb) AS word)::tsquery

-- name: task_rows_from_label
FROM task_labels l JOIN tasks t ON t.id = l.task_id
WHERE l.key = %(label_key)s::text AND l.value = %(label_value)s::text

-- name: task_rows_from_parent
FROM tasks t WHERE t.parent_id = %(parent_id)s::text

-- name: task_rows_from_name
FROM tasks t WHERE t.name COLLATE "C" = %(name)s::text

-- name: task_rows_from_agent
FROM tasks t WHERE t.agent = %(agent)s::text

-- The range of ids that start with the prefix (an index of ids); task_rows_where_id_prefix checks it.
-- name: task_rows_from_id_prefix
FROM tasks t WHERE t.id COLLATE "C" >= %(id_prefix)s::text AND t.id COLLATE "C" < %(id_prefix_end)s::text

-- The creation times, as a range of the index the rows are walked in (all, parent, name, agent).
-- name: task_rows_created_in
AND t.created_at >= %(since)s::bigint AND t.created_at < %(until)s::bigint

-- The creation times, checked on each row (+: not a range to walk, whose order is not the one asked).
-- name: task_rows_created_within
AND +t.created_at >= %(since)s::bigint AND +t.created_at < %(until)s::bigint

-- name: task_rows_where_statuses
AND t.status IN (SELECT jsonb_array_elements_text(%(statuses)s::jsonb))

-- name: task_rows_where_waiting_on
AND t.waiting_on IN (SELECT jsonb_array_elements_text(%(waiting_on)s::jsonb))

-- name: task_rows_where_name
AND t.name COLLATE "C" = %(name)s::text

-- name: task_rows_where_agent
AND t.agent = %(agent)s::text

-- name: task_rows_where_model
AND t.model = %(model)s::text

-- name: task_rows_where_code_version
AND t.code_version = %(code_version)s::text

-- name: task_rows_where_parent
AND t.parent_id = %(parent_id)s::text

-- name: task_rows_where_id_prefix
AND starts_with(t.id, %(id_prefix)s::text)

-- name: task_rows_where_min_cost
AND t.cost >= %(min_cost)s::float8

-- name: task_rows_where_max_cost
AND t.cost <= %(max_cost)s::float8

-- Last changed before a time: what retention deletes walks tasks_by_updated up to it.
-- name: task_rows_where_updated_before
AND t.updated_at < %(updated_before)s::bigint

-- Every label given (a JSON object: those the rows' lead does not hold already) is one of the
-- task's: none of them lacks a row (written so, each is looked up by the task's primary key).
-- name: task_rows_where_labels
AND NOT EXISTS (
    SELECT 1 FROM jsonb_each_text(%(labels)s::jsonb) AS wanted
    LEFT JOIN task_labels has ON has.task_id = t.id AND has.key = wanted.key AND has.value = wanted.value
    WHERE has.task_id IS NULL)

-- name: task_rows_after_created_asc
AND (t.created_at, t.id COLLATE "C") > (%(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_created_desc
AND (t.created_at, t.id COLLATE "C") < (%(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_updated_asc
AND (t.updated_at, t.created_at, t.id COLLATE "C") > (%(after_value)s::bigint, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_updated_desc
AND (t.updated_at, t.created_at, t.id COLLATE "C") < (%(after_value)s::bigint, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_name_asc
AND (t.name COLLATE "C", t.created_at, t.id COLLATE "C") > (%(after_value)s::text, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_name_desc
AND (t.name COLLATE "C", t.created_at, t.id COLLATE "C") < (%(after_value)s::text, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_status_asc
AND (t.status, t.created_at, t.id COLLATE "C") > (%(after_value)s::text, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_status_desc
AND (t.status, t.created_at, t.id COLLATE "C") < (%(after_value)s::text, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_cost_asc
AND (t.cost, t.created_at, t.id COLLATE "C") > (%(after_value)s::float8, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_after_cost_desc
AND (t.cost, t.created_at, t.id COLLATE "C") < (%(after_value)s::float8, %(after_created)s::bigint, %(after_id)s::text)

-- name: task_rows_order_created_asc
ORDER BY t.created_at, t.id COLLATE "C"

-- name: task_rows_order_created_desc
ORDER BY t.created_at DESC, t.id COLLATE "C" DESC

-- name: task_rows_order_updated_asc
ORDER BY t.updated_at, t.created_at, t.id COLLATE "C"

-- name: task_rows_order_updated_desc
ORDER BY t.updated_at DESC, t.created_at DESC, t.id COLLATE "C" DESC

-- name: task_rows_order_name_asc
ORDER BY t.name COLLATE "C", t.created_at, t.id COLLATE "C"

-- name: task_rows_order_name_desc
ORDER BY t.name COLLATE "C" DESC, t.created_at DESC, t.id COLLATE "C" DESC

-- name: task_rows_order_status_asc
ORDER BY t.status, t.created_at, t.id COLLATE "C"

-- name: task_rows_order_status_desc
ORDER BY t.status DESC, t.created_at DESC, t.id COLLATE "C" DESC

-- name: task_rows_order_cost_asc
ORDER BY t.cost, t.created_at, t.id COLLATE "C"

-- name: task_rows_order_cost_desc
ORDER BY t.cost DESC, t.created_at DESC, t.id COLLATE "C" DESC

-- name: task_rows_page
LIMIT %(limit)s OFFSET %(offset)s

-- What finds a task (store/sql/task_rows.py): its labels, given when it is made, and the words
-- it is searched by (a JSON array), put when it is made and again when it ends.

-- name: insert_task_labels
INSERT INTO task_labels (task_id, key, value)
SELECT %(task_id)s, key, value FROM jsonb_each_text(%(labels)s::jsonb)

-- name: put_task_words
INSERT INTO task_text (task_id, words)
VALUES (%(task_id)s, array_to_tsvector(ARRAY(SELECT jsonb_array_elements_text(%(words)s::jsonb))))
ON CONFLICT (task_id) DO UPDATE SET words = EXCLUDED.words

-- name: task_records_after
-- The records of the tasks stored before the search index (migration 16), a batch at a time.
SELECT id, status, record FROM tasks WHERE id COLLATE "C" > %(after)s::text ORDER BY id COLLATE "C" LIMIT %(limit)s

-- contents (store/sql/content.py): a task's content-addressed values, each stored once.

-- name: put_content
INSERT INTO contents (task_id, hash, prev, body) VALUES (%(task_id)s, %(hash)s, NULL, %(body)s)
ON CONFLICT (task_id, hash) DO NOTHING

-- name: put_content_after
-- A list stored as the list it extends (prev) and its new items: only when prev is stored (else 0 rows).
INSERT INTO contents (task_id, hash, prev, body)
SELECT %(task_id)s, %(hash)s, %(prev)s, %(body)s
WHERE EXISTS (SELECT 1 FROM contents WHERE task_id = %(task_id)s AND hash = %(prev)s)
ON CONFLICT (task_id, hash) DO NOTHING

-- name: has_content
SELECT 1 FROM contents WHERE task_id = %(task_id)s AND hash = %(hash)s

-- name: get_contents
-- The rows of the hashes given (a JSON array), and of every list each extends, back to its start.
WITH RECURSIVE wanted(hash) AS (
    SELECT value FROM jsonb_array_elements_text(CAST(%(hashes)s AS jsonb))
    UNION
    SELECT c.prev FROM contents c JOIN wanted w ON c.hash = w.hash
    WHERE c.task_id = %(task_id)s AND c.prev IS NOT NULL
)
SELECT c.hash, c.prev, c.body FROM contents c JOIN wanted w ON c.hash = w.hash
WHERE c.task_id = %(task_id)s

-- delete_task (store/sql/task_delete.py): every row of one task, table by table.

-- name: delete_task_steps
DELETE FROM steps WHERE task_id = %(task_id)s

-- name: delete_task_operations
DELETE FROM operations WHERE task_id = %(task_id)s

-- name: delete_task_contents
DELETE FROM contents WHERE task_id = %(task_id)s

-- name: delete_task_messages
DELETE FROM messages WHERE thread_id = %(task_id)s

-- name: delete_task_events
-- With the task's row of archived_tasks (a task made again under its id starts anew).
WITH unarchived AS (DELETE FROM archived_tasks WHERE task_id = %(task_id)s)
DELETE FROM events WHERE task_id = %(task_id)s

-- name: delete_task_artifacts
DELETE FROM artifacts WHERE task_id = %(task_id)s

-- name: delete_task_triggers
DELETE FROM triggers WHERE task_id = %(task_id)s

-- name: delete_task_checkpoints
DELETE FROM checkpoints WHERE task_id = %(task_id)s

-- name: delete_task_approvals
DELETE FROM approvals WHERE task_id = %(task_id)s

-- name: delete_task_inbox
DELETE FROM inbox WHERE task_id = %(task_id)s

-- name: delete_task_streams
DELETE FROM streams WHERE task_id = %(task_id)s

-- name: delete_task_task_grants
DELETE FROM task_grants WHERE task_id = %(task_id)s

-- name: delete_task_lease_claims
DELETE FROM lease_claims WHERE task_id = %(task_id)s

-- name: delete_task_leases
DELETE FROM leases WHERE task_id = %(task_id)s

-- name: delete_task_task_labels
DELETE FROM task_labels WHERE task_id = %(task_id)s

-- name: delete_task_task_text
DELETE FROM task_text WHERE task_id = %(task_id)s

-- name: delete_task_tasks
DELETE FROM tasks WHERE id = %(task_id)s

-- LangGraph's checkpoints (store/sql/langgraph.py).

-- name: put_langgraph_value
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
VALUES (%(thread_id)s, %(hash)s, NULL, NULL, %(type)s, %(body)s)
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: put_langgraph_value_after
-- A value stored as the value it extends (prev) and its new items: only when prev is stored (else 0 rows).
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
SELECT %(thread_id)s, %(hash)s, %(prev)s, %(items)s, %(type)s, %(body)s
WHERE EXISTS (SELECT 1 FROM langgraph_values WHERE thread_id = %(thread_id)s AND hash = %(prev)s)
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: has_langgraph_value
SELECT 1 FROM langgraph_values WHERE thread_id = %(thread_id)s AND hash = %(hash)s

-- name: get_langgraph_values
-- The values of the hashes given (a JSON array), and of every value each extends or takes its items
-- from, back to whole ones.
WITH RECURSIVE wanted(hash) AS (
    SELECT value FROM jsonb_array_elements_text(CAST(%(hashes)s AS jsonb))
    UNION
    SELECT link.hash FROM langgraph_values v JOIN wanted w ON v.hash = w.hash
    CROSS JOIN LATERAL (VALUES (v.prev), (v.items)) AS link(hash)
    WHERE v.thread_id = %(thread_id)s AND link.hash IS NOT NULL
)
SELECT v.hash, v.prev, v.items, v.type, v.body FROM langgraph_values v JOIN wanted w ON v.hash = w.hash
WHERE v.thread_id = %(thread_id)s

-- name: put_langgraph_checkpoint
INSERT INTO langgraph_checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values)
VALUES (%(thread_id)s, %(ns)s, %(checkpoint_id)s, %(parent_id)s, %(run_id)s, %(type)s, %(body)s, %(metadata)s, %(values)s)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_id = excluded.parent_id, run_id = excluded.run_id, type = excluded.type, body = excluded.body,
    metadata = excluded.metadata, channel_values = excluded.channel_values

-- name: get_langgraph_checkpoint
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s

-- name: latest_langgraph_checkpoint
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s
ORDER BY checkpoint_id DESC LIMIT 1

-- name: list_langgraph_checkpoints
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = %(thread_id)s AND (CAST(%(ns)s AS TEXT) IS NULL OR checkpoint_ns = %(ns)s)
  AND (CAST(CAST(%(before)s AS bytea) AS TEXT) IS NULL OR checkpoint_id < CAST(%(before)s AS bytea))
ORDER BY checkpoint_id DESC, checkpoint_ns LIMIT %(limit)s OFFSET %(offset)s

-- name: list_all_langgraph_checkpoints
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE (CAST(%(ns)s AS TEXT) IS NULL OR checkpoint_ns = %(ns)s) AND (CAST(CAST(%(before)s AS bytea) AS TEXT) IS NULL OR checkpoint_id < CAST(%(before)s AS bytea))
ORDER BY checkpoint_id DESC, thread_id, checkpoint_ns LIMIT %(limit)s OFFSET %(offset)s

-- name: claim_langgraph_checkpoint_writes
-- A task's first writes on a checkpoint go in the checkpoint's row when it is stored and no task took
-- it (and the task has no row in langgraph_writes): else 0 rows, and they go to langgraph_writes.
UPDATE langgraph_checkpoints SET task_id = %(task_id)s, task_path = %(task_path)s, task_writes = %(writes)s,
    write_hashes = %(value_hashes)s
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s
  AND task_id IS NULL AND NOT EXISTS (
    SELECT 1 FROM langgraph_writes w WHERE w.thread_id = %(thread_id)s AND w.checkpoint_ns = %(ns)s
      AND w.checkpoint_id = %(checkpoint_id)s AND w.task_id = %(task_id)s
)

-- name: get_langgraph_checkpoint_writes
SELECT task_path, task_writes, write_hashes FROM langgraph_checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s FOR UPDATE

-- name: update_langgraph_checkpoint_writes
UPDATE langgraph_checkpoints SET task_path = %(task_path)s, task_writes = %(writes)s, write_hashes = %(value_hashes)s
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s

-- name: put_langgraph_task_writes
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
VALUES (%(thread_id)s, %(ns)s, %(checkpoint_id)s, %(task_id)s, %(task_path)s, %(writes)s, %(value_hashes)s)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: get_langgraph_task_writes
SELECT task_path, writes, value_hashes FROM langgraph_writes
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s
  AND task_id = %(task_id)s FOR UPDATE

-- name: update_langgraph_task_writes
UPDATE langgraph_writes SET task_path = %(task_path)s, writes = %(writes)s, value_hashes = %(value_hashes)s
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id = %(checkpoint_id)s
  AND task_id = %(task_id)s

-- name: list_langgraph_writes
-- The writes in langgraph_writes, and those in the checkpoints' rows.
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes
FROM langgraph_writes
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id BETWEEN %(low)s AND %(high)s
UNION ALL
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, task_writes, write_hashes
FROM langgraph_checkpoints
WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(ns)s AND checkpoint_id BETWEEN %(low)s AND %(high)s AND task_id IS NOT NULL

-- name: delete_langgraph_thread_writes
DELETE FROM langgraph_writes WHERE thread_id = %(thread_id)s

-- name: delete_langgraph_thread_checkpoints
DELETE FROM langgraph_checkpoints WHERE thread_id = %(thread_id)s

-- name: delete_langgraph_thread_values
DELETE FROM langgraph_values WHERE thread_id = %(thread_id)s

-- name: langgraph_threads_of_runs
SELECT DISTINCT thread_id FROM langgraph_checkpoints WHERE run_id IN (SELECT value FROM jsonb_array_elements_text(CAST(%(runs)s AS jsonb)))

-- name: delete_langgraph_run_writes
DELETE FROM langgraph_writes WHERE (thread_id, checkpoint_ns, checkpoint_id) IN (
    SELECT thread_id, checkpoint_ns, checkpoint_id FROM langgraph_checkpoints
    WHERE run_id IN (SELECT value FROM jsonb_array_elements_text(CAST(%(runs)s AS jsonb)))
)

-- name: delete_langgraph_run_checkpoints
DELETE FROM langgraph_checkpoints WHERE run_id IN (SELECT value FROM jsonb_array_elements_text(CAST(%(runs)s AS jsonb)))

-- name: prune_langgraph_writes
-- Every write of the thread but those of each namespace's latest checkpoint.
DELETE FROM langgraph_writes WHERE thread_id = %(thread_id)s AND checkpoint_id IS DISTINCT FROM (
    SELECT c.checkpoint_id FROM langgraph_checkpoints c
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = langgraph_writes.checkpoint_ns
    ORDER BY c.checkpoint_id DESC LIMIT 1  -- bytea has no max()
)

-- name: prune_langgraph_checkpoints
DELETE FROM langgraph_checkpoints WHERE thread_id = %(thread_id)s AND checkpoint_id < (
    SELECT c.checkpoint_id FROM langgraph_checkpoints c
    WHERE c.thread_id = %(thread_id)s AND c.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
    ORDER BY c.checkpoint_id DESC LIMIT 1  -- bytea has no max()
)

-- name: collect_langgraph_values
-- Every value of the thread that no checkpoint or pending write of it reaches, directly or through the
-- values they extend or take their items from.
DELETE FROM langgraph_values WHERE thread_id = %(thread_id)s AND hash NOT IN (
    WITH RECURSIVE reached(hash) AS (
        SELECT j.value FROM langgraph_checkpoints c, jsonb_each_text(CAST(c.channel_values AS jsonb)) j
        WHERE c.thread_id = %(thread_id)s
        UNION
        SELECT j.value FROM langgraph_writes w, jsonb_array_elements_text(CAST(w.value_hashes AS jsonb)) j
        WHERE w.thread_id = %(thread_id)s AND w.value_hashes IS NOT NULL
        UNION
        SELECT j.value FROM langgraph_checkpoints c, jsonb_array_elements_text(CAST(c.write_hashes AS jsonb)) j
        WHERE c.thread_id = %(thread_id)s AND c.write_hashes IS NOT NULL
        UNION
        SELECT link.hash FROM langgraph_values v JOIN reached r ON v.hash = r.hash
        CROSS JOIN LATERAL (VALUES (v.prev), (v.items)) AS link(hash)
        WHERE v.thread_id = %(thread_id)s AND link.hash IS NOT NULL
    )
    SELECT hash FROM reached WHERE hash IS NOT NULL
)

-- name: copy_langgraph_checkpoints
INSERT INTO langgraph_checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values,
     task_id, task_path, task_writes, write_hashes)
SELECT %(target)s, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values,
    task_id, task_path, task_writes, write_hashes
FROM langgraph_checkpoints WHERE thread_id = %(source)s
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING

-- name: copy_langgraph_writes
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
SELECT %(target)s, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes
FROM langgraph_writes WHERE thread_id = %(source)s
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: copy_langgraph_checkpoint_writes
-- The writes in the source's checkpoint rows that the target's rows do not hold (a checkpoint the
-- target had already), to the target's langgraph_writes.
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
SELECT %(target)s, s.checkpoint_ns, s.checkpoint_id, s.task_id, s.task_path, s.task_writes, s.write_hashes
FROM langgraph_checkpoints s
WHERE s.thread_id = %(source)s AND s.task_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM langgraph_checkpoints t
    WHERE t.thread_id = %(target)s AND t.checkpoint_ns = s.checkpoint_ns AND t.checkpoint_id = s.checkpoint_id
      AND t.task_id = s.task_id
)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: copy_langgraph_values
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
SELECT %(target)s, hash, prev, items, type, body FROM langgraph_values WHERE thread_id = %(source)s
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: set_limit
INSERT INTO limits (key, rpm, tpm, concurrency) VALUES (%(key)s, %(rpm)s, %(tpm)s, %(concurrency)s)
ON CONFLICT (key) DO UPDATE SET rpm = EXCLUDED.rpm, tpm = EXCLUDED.tpm, concurrency = EXCLUDED.concurrency
RETURNING key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until

-- name: delete_limit
DELETE FROM limits WHERE key = %(key)s

-- name: delete_limit_slots
DELETE FROM limit_slots WHERE key = %(key)s

-- name: list_limits
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits
ORDER BY key COLLATE "C"

-- name: limits_of
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits
WHERE key IN (SELECT jsonb_array_elements_text(%(keys)s::jsonb)) ORDER BY key COLLATE "C"

-- name: lock_limits
-- Each key's row held until the transaction ends: workers on every host take turns one at a time.
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits
WHERE key IN (SELECT jsonb_array_elements_text(%(keys)s::jsonb)) ORDER BY key COLLATE "C"
FOR UPDATE

-- name: pace_limit
UPDATE limits SET next_request_at = %(next_request_at)s, next_token_at = %(next_token_at)s
WHERE key = %(key)s

-- name: block_limit
INSERT INTO limits (key, blocked_until) VALUES (%(key)s, %(until)s)
ON CONFLICT (key) DO UPDATE SET blocked_until = GREATEST(limits.blocked_until, EXCLUDED.blocked_until)

-- name: drop_limit_turns
DELETE FROM limit_turns WHERE at < %(before)s

-- name: get_limit_turn
SELECT at FROM limit_turns WHERE holder = %(holder)s

-- name: delete_limit_turn
DELETE FROM limit_turns WHERE holder = %(holder)s

-- name: put_limit_turn
INSERT INTO limit_turns (holder, at) VALUES (%(holder)s, %(at)s)
ON CONFLICT (holder) DO UPDATE SET at = EXCLUDED.at

-- name: drop_dead_limit_slots
-- The slots whose lease is no longer live: its task ended, waits, or its worker died.
DELETE FROM limit_slots s WHERE s.key = %(key)s AND NOT EXISTS (
    SELECT 1 FROM leases l WHERE l.task_id = s.task_id AND l.token = s.token
      AND NOT l.released AND l.expires_at > %(now)s)

-- name: count_limit_slots
SELECT COUNT(*) FROM limit_slots s
JOIN leases l ON l.task_id = s.task_id AND l.token = s.token
WHERE s.key = %(key)s AND NOT l.released AND l.expires_at > %(now)s

-- name: put_limit_slot
INSERT INTO limit_slots (key, holder, task_id, token) VALUES (%(key)s, %(holder)s, %(task_id)s, %(token)s)
ON CONFLICT (key, holder) DO UPDATE SET task_id = EXCLUDED.task_id, token = EXCLUDED.token

-- name: release_limit_slots
DELETE FROM limit_slots WHERE holder = %(holder)s

-- name: queue_give_back
-- Release the lease when the tasks of its task's queue (and partition) holding a live lease,
-- its own included, are more than the queue's concurrency. The caller holds the queue lock
-- (store/sql/limits.py): a claim judged after another counts that one's leases.
UPDATE leases SET released = TRUE
WHERE task_id = %(task_id)s AND token = %(token)s AND NOT released AND EXISTS (
    SELECT 1 FROM tasks t JOIN limits m ON m.key = 'queue:' || t.queue_name
    WHERE t.id = %(task_id)s AND m.concurrency < (
        SELECT COUNT(*) FROM tasks o JOIN leases ol ON ol.task_id = o.id
        WHERE o.queue_name = t.queue_name AND o.queue_partition IS NOT DISTINCT FROM t.queue_partition
          AND NOT ol.released AND ol.expires_at > %(now)s))
-- name: set_spend_cap
-- A cap set, or set again: its limit and approval replaced, its created_at and spend kept.
INSERT INTO spend_caps (scope, name, daily, approve_over, created_at, updated_at)
VALUES (%(scope)s, %(name)s, %(daily)s, %(approve_over)s, %(created_at)s, %(updated_at)s)
ON CONFLICT (scope, name) DO UPDATE SET
    daily = excluded.daily, approve_over = excluded.approve_over, updated_at = excluded.updated_at
RETURNING scope, name, daily, approve_over, created_at, updated_at

-- name: delete_spend_cap
DELETE FROM spend_caps WHERE scope = %(scope)s AND name = %(name)s

-- name: delete_spend_days
DELETE FROM spend_days WHERE scope = %(scope)s AND name = %(name)s

-- name: list_spend_caps
SELECT c.scope, c.name, c.daily, c.approve_over, c.created_at, c.updated_at, d.spent, d.pressure_told
FROM spend_caps c
LEFT JOIN spend_days d ON d.scope = c.scope AND d.name = c.name AND d.day = %(day)s
ORDER BY c.scope, c.name

-- name: spend_for_task
-- The caps covering one task: its agent's (the tasks row), its labels' (task_labels, by key).
SELECT c.scope, c.name, c.daily, c.approve_over, c.created_at, c.updated_at, d.spent, d.pressure_told
FROM spend_caps c
LEFT JOIN spend_days d ON d.scope = c.scope AND d.name = c.name AND d.day = %(day)s
WHERE (c.scope = 'agent' AND c.name = (SELECT agent FROM tasks WHERE id = %(task_id)s))
   OR (c.scope = 'label' AND c.name IN (SELECT key || '=' || value FROM task_labels WHERE task_id = %(task_id)s))
ORDER BY c.scope, c.name

-- name: count_spend
-- A priced model call's cost, added to each covering cap's day: one statement, with the call's record.
INSERT INTO spend_days (scope, name, day, spent)
SELECT c.scope, c.name, %(day)s, %(cost)s FROM spend_caps c
WHERE (c.scope = 'agent' AND c.name = (SELECT agent FROM tasks WHERE id = %(task_id)s))
   OR (c.scope = 'label' AND c.name IN (SELECT key || '=' || value FROM task_labels WHERE task_id = %(task_id)s))
ON CONFLICT (scope, name, day) DO UPDATE SET spent = spend_days.spent + excluded.spent

-- name: mark_spend_pressure
UPDATE spend_days SET pressure_told = TRUE
WHERE scope = %(scope)s AND name = %(name)s AND day = %(day)s AND pressure_told = FALSE

-- name: cost_totals
-- What model calls cost by UTC day, agent and model: each call that succeeded, under the model
-- its input names (the "$content" wrapper's value when its large parts were stored apart), else
-- its task's. A full read of the journal's model calls in the window: a report, not a hot path.
-- The JSON is read as json, not jsonb: an input may hold a \u0000 jsonb refuses.
SELECT to_char(to_timestamp(o.finished_at / 1000000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
       t.agent AS agent,
       COALESCE(
           CASE WHEN (o.input::json ->> '$content') IS NOT NULL
                THEN o.input::json -> 'value' ->> 'model' ELSE o.input::json ->> 'model' END,
           t.model, 'unknown'
       ) AS model,
       COUNT(*),
       SUM(CASE WHEN (o.meta::json -> 'usage' ->> 'cost') IS NULL THEN 1 ELSE 0 END),
       SUM(COALESCE((o.meta::json -> 'usage' ->> 'prompt_tokens')::bigint, 0)
           + COALESCE((o.meta::json -> 'usage' ->> 'completion_tokens')::bigint, 0)),
       SUM(COALESCE((o.meta::json -> 'usage' ->> 'cost')::double precision, 0))
FROM operations o JOIN tasks t ON t.id = o.task_id
WHERE o.kind = 'model' AND o.status = 'succeeded' AND o.finished_at IS NOT NULL
  AND (%(since)s::bigint IS NULL OR o.finished_at >= %(since)s::bigint)
  AND (%(until)s::bigint IS NULL OR o.finished_at < %(until)s::bigint)
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3

-- Partitioned history (store/sql/postgresql/history.py, migration 0023): PostgreSQL alone.
-- An archive number is a partition of ended tasks: their end's UTC day (since the epoch) x 4 + their
-- status (1 completed, 2 failed, 3 cancelled); 0 is the live partition.

-- name: history_lock
-- One archiving or dropping at a time, whichever worker or `ratchet gc` does it.
SELECT pg_advisory_xact_lock(7316425586001286602)

-- name: history_lock_timeout
-- A drop waits this long at most for the tables' lock (the next pass tries again), so the journal's
-- writes queued behind it wait no longer.
SET LOCAL lock_timeout = '2s'

-- name: history_newest_archive
-- The newest day archived of a status: a pass walks the tasks that ended from that day on.
SELECT archive FROM archived_tasks WHERE mod(archive, 4) = %(code)s ORDER BY archive DESC LIMIT 1

-- name: history_to_archive
-- Ended tasks of a status whose rows are live and that no live lease holds, along the index of
-- update times (an ended task's is its end) after the last one looked at.
SELECT t.id, t.updated_at, t.created_at FROM tasks t
WHERE (t.updated_at, t.created_at, t.id COLLATE "C") > (%(after_updated)s, %(after_created)s, %(after_id)s COLLATE "C")
  AND t.status = %(status)s
  AND NOT EXISTS (SELECT 1 FROM archived_tasks a WHERE a.task_id = t.id)
  AND NOT EXISTS (SELECT 1 FROM leases l
                  WHERE l.task_id = t.id AND NOT l.released AND l.expires_at > %(now)s)
ORDER BY t.updated_at, t.created_at, t.id COLLATE "C"
LIMIT %(limit)s

-- name: history_partition_exists
SELECT to_regclass(%(name)s) IS NOT NULL

-- name: history_lock_events
-- The locks that number each task's events (append_event's), so no event is added while they move.
SELECT pg_advisory_xact_lock(hashtextextended('ratchet:events:' || id, 0))
FROM unnest(CAST(%(ids)s AS text[])) AS id ORDER BY id

-- name: history_archive_tasks
INSERT INTO archived_tasks (task_id, archive, last_event)
SELECT m.id, m.archive,
       COALESCE((SELECT MAX(seq) FROM events e WHERE e.task_id = m.id AND e.archive = 0),
                (SELECT last_event FROM archived_tasks a WHERE a.task_id = m.id), 0)
FROM unnest(CAST(%(ids)s AS text[]), CAST(%(archives)s AS integer[])) AS m(id, archive)

-- name: history_move_operations
-- A row whose partition key changes moves to the partition of its new key.
UPDATE operations o SET archive = m.archive
FROM unnest(CAST(%(ids)s AS text[]), CAST(%(archives)s AS integer[])) AS m(id, archive)
WHERE o.archive = 0 AND o.task_id = m.id

-- name: history_move_events
UPDATE events e SET archive = m.archive
FROM unnest(CAST(%(ids)s AS text[]), CAST(%(archives)s AS integer[])) AS m(id, archive)
WHERE e.archive = 0 AND e.task_id = m.id

-- name: history_partitions
-- The archive partitions of the journal (events has the same ones).
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass('operations') AND c.relname <> 'operations_live'
ORDER BY c.relname

-- The partitions' own statements: {table} and {partition} are names the store composes (psycopg's
-- sql.Identifier); a bound is a number. Made apart, then attached: an attach locks the parent less
-- than CREATE TABLE ... PARTITION OF does (the journal's writes go on meanwhile).

-- name: history_create_partition
CREATE TABLE {partition} (LIKE {table} INCLUDING DEFAULTS)

-- name: history_attach_partition
ALTER TABLE {table} ATTACH PARTITION {partition} FOR VALUES FROM ({low}) TO ({high})

-- name: history_drop_partition
DROP TABLE {partition}

-- name: history_tasks_in
SELECT task_id FROM archived_tasks WHERE archive = %(archive)s

-- name: history_count_in
SELECT COUNT(*) FROM archived_tasks WHERE archive = %(archive)s

-- name: history_kept_parent
-- A task of the partition with a child task outside it: it stays, so the partition does.
SELECT c.parent_id, c.id FROM tasks c
WHERE c.parent_id = ANY(CAST(%(ids)s AS text[])) AND NOT (c.id = ANY(CAST(%(ids)s AS text[])))
LIMIT 1

-- name: history_delete_tasks
-- Every row of the tasks given outside the partitions dropped with them: what delete_task deletes
-- (a test holds the two to the same tables), and the rows of their journal and events added live
-- after they were archived.
WITH gone AS (SELECT unnest(CAST(%(ids)s AS text[])) AS id),
    steps_gone AS (DELETE FROM steps WHERE task_id IN (SELECT id FROM gone)),
    operations_gone AS (DELETE FROM operations WHERE archive = 0 AND task_id IN (SELECT id FROM gone)),
    contents_gone AS (DELETE FROM contents WHERE task_id IN (SELECT id FROM gone)),
    messages_gone AS (DELETE FROM messages WHERE thread_id IN (SELECT id FROM gone)),
    events_gone AS (DELETE FROM events WHERE archive = 0 AND task_id IN (SELECT id FROM gone)),
    artifacts_gone AS (DELETE FROM artifacts WHERE task_id IN (SELECT id FROM gone)),
    triggers_gone AS (DELETE FROM triggers WHERE task_id IN (SELECT id FROM gone)),
    checkpoints_gone AS (DELETE FROM checkpoints WHERE task_id IN (SELECT id FROM gone)),
    approvals_gone AS (DELETE FROM approvals WHERE task_id IN (SELECT id FROM gone)),
    inbox_gone AS (DELETE FROM inbox WHERE task_id IN (SELECT id FROM gone)),
    streams_gone AS (DELETE FROM streams WHERE task_id IN (SELECT id FROM gone)),
    task_grants_gone AS (DELETE FROM task_grants WHERE task_id IN (SELECT id FROM gone)),
    lease_claims_gone AS (DELETE FROM lease_claims WHERE task_id IN (SELECT id FROM gone)),
    leases_gone AS (DELETE FROM leases WHERE task_id IN (SELECT id FROM gone)),
    task_labels_gone AS (DELETE FROM task_labels WHERE task_id IN (SELECT id FROM gone)),
    task_text_gone AS (DELETE FROM task_text WHERE task_id IN (SELECT id FROM gone)),
    archived_gone AS (DELETE FROM archived_tasks WHERE task_id IN (SELECT id FROM gone))
DELETE FROM tasks WHERE id IN (SELECT id FROM gone)
