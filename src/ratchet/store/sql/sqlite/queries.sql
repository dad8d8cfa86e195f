-- Named queries of the SQLite store. Each begins with a line "-- name: NAME".
-- Parameters are named (:name); times are integer microseconds since the epoch.
-- The PostgreSQL catalogue has a query of every name used by the store's
-- operations (store/sql/ops.py), doing the same in its own dialect.

-- name: begin_write
BEGIN IMMEDIATE

-- name: begin_read
BEGIN

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

-- name: create_version_table
CREATE TABLE IF NOT EXISTS ratchet_schema_version (
    version     INTEGER PRIMARY KEY,
    applied_at  INTEGER NOT NULL
)

-- name: schema_version
SELECT COALESCE(MAX(version), 0) FROM ratchet_schema_version

-- name: list_schema_versions
SELECT version FROM ratchet_schema_version

-- name: record_version
INSERT INTO ratchet_schema_version (version, applied_at) VALUES (:version, :applied_at)

-- name: list_tables
SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'

-- name: check_fence
-- Driver.check: a row whose first column is true when the lease (task_id, token) is current.
-- BEGIN IMMEDIATE already holds the file: no claim can replace the lease before the commit.
SELECT token = ?2 AND NOT released FROM leases WHERE task_id = ?1

-- name: insert_task
INSERT INTO tasks (id, status, waiting_on, created_at, record, priority, parent_id, name, agent, updated_at,
                   model, cost, queue_name, queue_partition, code_version)
VALUES (:id, :status, :waiting_on, :created_at, :record, :priority, :parent_id, :name, :agent,
        :updated_at, :model, :cost, :queue_name, :queue_partition, :code_version)
ON CONFLICT (id) DO NOTHING

-- name: get_task
SELECT id, status, record FROM tasks WHERE id = :id

-- name: get_tasks
SELECT id, status, record FROM tasks WHERE id IN (SELECT value FROM json_each(:ids))

-- name: get_task_locked
SELECT id, status, record FROM tasks WHERE id = :id

-- A write transaction holds the whole database already: nothing more to hold.
-- name: hold_run
SELECT 1 FROM leases WHERE task_id = :task_id

-- name: lock_task
SELECT status, waiting_on FROM tasks WHERE id = :id

-- name: list_tasks
SELECT id, status, record FROM tasks ORDER BY created_at, rowid LIMIT COALESCE(:limit, -1)

-- name: list_children
SELECT id, status, record FROM tasks WHERE parent_id = :parent_id ORDER BY created_at, rowid

-- name: list_tasks_by_status
SELECT id, status, record FROM tasks WHERE status = :status
ORDER BY created_at, rowid LIMIT COALESCE(:limit, -1)

-- name: update_task
UPDATE tasks SET status = :status, waiting_on = :waiting_on, record = :record, priority = :priority,
                 name = :name, agent = :agent, updated_at = :updated_at, model = :model, cost = :cost,
                 code_version = :code_version
WHERE id = :id

-- name: list_orphaned_tasks
SELECT t.id, t.status, t.record FROM tasks t
LEFT JOIN leases l ON l.task_id = t.id
WHERE (t.status IN ('queued', 'running') OR (t.status = 'waiting' AND t.waiting_on IN ('timer', 'limit'))
       OR (t.status = 'waiting' AND t.waiting_on = 'children' AND NOT EXISTS (
           SELECT 1 FROM tasks c WHERE c.parent_id = t.id
             AND c.status NOT IN ('completed', 'failed', 'cancelled'))))
  AND (l.task_id IS NULL OR l.released = 1 OR l.expires_at <= :now)
  AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
ORDER BY t.priority, t.created_at, t.rowid
LIMIT :limit

-- name: delete_steps
DELETE FROM steps WHERE task_id = :task_id

-- name: insert_step
INSERT INTO steps (task_id, idx, status, record) VALUES (:task_id, :idx, :status, :record)

-- name: lock_step
SELECT status FROM steps WHERE task_id = :task_id AND idx = :idx

-- name: update_step
UPDATE steps SET status = :status, record = :record WHERE task_id = :task_id AND idx = :idx

-- name: list_steps
SELECT idx, record FROM steps WHERE task_id = :task_id ORDER BY idx

-- name: record_op_started
-- The journal's two writes take an operation's row positionally (rows.OP_COLUMNS order):
-- they run on every journaled call, and binding by position is the cheaper way.
INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                        input, output, error, started_at, finished_at, error_type,
                        next_attempt_at, meta)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
        ?8, ?9, ?10, ?11, ?12, ?13, ?14,
        ?15)
ON CONFLICT (task_id, seq) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, attempt = excluded.attempt,
    idempotency_key = excluded.idempotency_key, status = 'started', input = excluded.input,
    output = NULL, error = NULL, started_at = excluded.started_at, finished_at = NULL,
    error_type = NULL, next_attempt_at = NULL, meta = excluded.meta
WHERE operations.status <> 'succeeded'

-- name: record_op_started_if_check_fence
-- record_op_started, written only while the lease (?16, ?17) is current: the fence and the write in one
-- statement (SqliteDriver.write runs check_fence itself when this one writes nothing).
INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                        input, output, error, started_at, finished_at, error_type,
                        next_attempt_at, meta)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
        ?8, ?9, ?10, ?11, ?12, ?13, ?14,
        ?15
WHERE (SELECT token = ?17 AND NOT released FROM leases WHERE task_id = ?16)
ON CONFLICT (task_id, seq) DO UPDATE SET
    kind = excluded.kind, name = excluded.name, attempt = excluded.attempt,
    idempotency_key = excluded.idempotency_key, status = 'started', input = excluded.input,
    output = NULL, error = NULL, started_at = excluded.started_at, finished_at = NULL,
    error_type = NULL, next_attempt_at = NULL, meta = excluded.meta
WHERE operations.status <> 'succeeded'

-- name: record_op_finished
-- One statement whether or not an intent row is there (a read-only call writes none).
-- A later attempt than the row's brings its own start; the same attempt keeps the start its intent wrote.
INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                        input, output, error, started_at, finished_at, error_type,
                        next_attempt_at, meta)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,
        ?8, ?9, ?10, ?11, ?12, ?13, ?14,
        ?15)
ON CONFLICT (task_id, seq) DO UPDATE SET
    attempt = excluded.attempt, status = excluded.status, output = excluded.output,
    error = excluded.error, finished_at = excluded.finished_at, error_type = excluded.error_type,
    next_attempt_at = excluded.next_attempt_at, meta = excluded.meta,
    started_at = CASE WHEN operations.attempt = excluded.attempt
                      THEN operations.started_at ELSE excluded.started_at END
WHERE operations.status <> 'succeeded'

-- name: record_op_finished_if_check_fence
-- record_op_finished, written only while the lease (?16, ?17) is current: the fence and the write in one
-- statement (SqliteDriver.write runs check_fence itself when this one writes nothing).
INSERT INTO operations (task_id, seq, kind, name, attempt, idempotency_key, status,
                        input, output, error, started_at, finished_at, error_type,
                        next_attempt_at, meta)
SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7,
        ?8, ?9, ?10, ?11, ?12, ?13, ?14,
        ?15
WHERE (SELECT token = ?17 AND NOT released FROM leases WHERE task_id = ?16)
ON CONFLICT (task_id, seq) DO UPDATE SET
    attempt = excluded.attempt, status = excluded.status, output = excluded.output,
    error = excluded.error, finished_at = excluded.finished_at, error_type = excluded.error_type,
    next_attempt_at = excluded.next_attempt_at, meta = excluded.meta,
    started_at = CASE WHEN operations.attempt = excluded.attempt
                      THEN operations.started_at ELSE excluded.started_at END
WHERE operations.status <> 'succeeded'

-- name: get_op
SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
       started_at, finished_at, error_type, next_attempt_at, meta
FROM operations WHERE task_id = :task_id AND seq = :seq

-- name: list_ops
SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
       started_at, finished_at, error_type, next_attempt_at, meta
FROM operations WHERE task_id = :task_id AND seq > :after_seq ORDER BY seq LIMIT COALESCE(:limit, -1)

-- name: count_ops
SELECT COUNT(*) FROM operations WHERE task_id = :task_id

-- name: count_events
SELECT COUNT(*) FROM events WHERE task_id = :task_id

-- name: next_message_seq
SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE thread_id = :thread_id

-- name: insert_message
INSERT INTO messages (thread_id, seq, record) VALUES (:thread_id, :seq, :record)

-- name: list_messages
SELECT record FROM messages
WHERE thread_id = :thread_id AND seq >= :start AND seq < :end ORDER BY seq

-- name: append_event
INSERT INTO events (task_id, seq, time, kind, severity, message, display_message, data)
SELECT :task_id, COALESCE(MAX(seq), 0) + 1, :time, :kind, :severity, :message,
       :display_message, :data
FROM events WHERE task_id = :task_id
RETURNING seq

-- name: list_ops_archived
-- PostgreSQL reads an archived task's journal with it (its partitioned history); SQLite never
-- archives, so list_ops never sends it here, and it reads what list_ops does.
SELECT task_id, seq, kind, name, attempt, idempotency_key, status, input, output, error,
       started_at, finished_at, error_type, next_attempt_at, meta
FROM operations WHERE task_id = :task_id AND seq > :after_seq ORDER BY seq LIMIT COALESCE(:limit, -1)

-- name: list_events_archived
-- As list_ops_archived: never sent on SQLite; list_events's text.
SELECT task_id, seq, time, kind, severity, message, display_message, data
FROM events WHERE task_id = :task_id AND seq > :after_seq
  AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
ORDER BY seq LIMIT COALESCE(:limit, -1)

-- name: last_events_archived
-- As list_ops_archived: never sent on SQLite; last_events's text.
SELECT * FROM (
    SELECT task_id, seq, time, kind, severity, message, display_message, data
    FROM events WHERE task_id = :task_id ORDER BY seq DESC LIMIT :count
) ORDER BY seq

-- name: list_events
SELECT task_id, seq, time, kind, severity, message, display_message, data
FROM events WHERE task_id = :task_id AND seq > :after_seq
  AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
ORDER BY seq LIMIT COALESCE(:limit, -1)

-- name: last_events
SELECT * FROM (
    SELECT task_id, seq, time, kind, severity, message, display_message, data
    FROM events WHERE task_id = :task_id ORDER BY seq DESC LIMIT :count
) ORDER BY seq

-- name: insert_artifact
INSERT INTO artifacts (id, task_id, type, summary, bytes, created_at, content, step)
VALUES (:id, :task_id, :type, :summary, :bytes, :created_at, :content, :step)
ON CONFLICT (id) DO NOTHING

-- name: get_artifact
SELECT id, task_id, type, summary, bytes, created_at, step FROM artifacts WHERE id = :id

-- name: read_artifact
SELECT substr(content, :offset + 1, :length) FROM artifacts WHERE id = :id

-- name: list_artifacts
SELECT id, task_id, type, summary, bytes, created_at, step FROM artifacts
WHERE task_id = :task_id ORDER BY created_at, rowid

-- name: put_task_trigger
-- A trigger put without a priority takes its task's.
INSERT INTO triggers (fire_at, priority, task_id, session_id, kind, payload, dedupe_key)
VALUES (:fire_at,
        COALESCE(:priority, (SELECT t.priority FROM tasks t WHERE t.id = :task_id), :default_priority),
        :task_id, :session_id, :kind, :payload, :dedupe_key)
ON CONFLICT (task_id, kind) WHERE task_id IS NOT NULL DO UPDATE SET
    fire_at = MIN(triggers.fire_at, excluded.fire_at),
    priority = MIN(triggers.priority, excluded.priority)
RETURNING id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key

-- name: insert_trigger
INSERT INTO triggers (fire_at, priority, task_id, session_id, kind, payload, dedupe_key)
VALUES (:fire_at, COALESCE(:priority, :default_priority), NULL, :session_id, :kind, :payload,
        :dedupe_key)
ON CONFLICT (dedupe_key) WHERE task_id IS NULL DO NOTHING
RETURNING id

-- name: get_trigger_by_dedupe_key
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers WHERE dedupe_key = :dedupe_key AND task_id IS NULL

-- name: next_due_at
SELECT MIN(fire_at) FROM triggers

-- name: count_tasks_by_status
SELECT status, COUNT(*) FROM tasks GROUP BY status

-- name: due_trigger_summary
SELECT COUNT(*), MIN(fire_at) FROM triggers WHERE fire_at <= :now

-- name: claim_due_triggers
-- Among the due triggers, the most urgent first; of equal priority, the one due longest.
DELETE FROM triggers WHERE id IN (
    SELECT id FROM triggers WHERE fire_at <= :now ORDER BY priority, fire_at, id LIMIT :limit
)
RETURNING id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key

-- name: list_triggers
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers ORDER BY fire_at, priority, id

-- name: list_task_triggers
SELECT id, fire_at, priority, task_id, session_id, kind, payload, dedupe_key
FROM triggers WHERE task_id = :task_id ORDER BY fire_at, priority, id

-- name: delete_triggers
DELETE FROM triggers WHERE task_id = :task_id

-- name: delete_trigger
DELETE FROM triggers WHERE id = :id

-- name: update_trigger
UPDATE triggers SET fire_at = :fire_at, payload = :payload WHERE id = :id

-- name: next_checkpoint_number
SELECT COALESCE(MAX(number), 0) + 1 FROM checkpoints WHERE task_id = :task_id

-- name: insert_checkpoint
INSERT INTO checkpoints (task_id, number, created_at, record)
VALUES (:task_id, :number, :created_at, :record)

-- name: get_checkpoint
SELECT record FROM checkpoints WHERE task_id = :task_id AND number = :number

-- name: latest_checkpoint
SELECT record FROM checkpoints WHERE task_id = :task_id ORDER BY number DESC LIMIT 1

-- name: list_checkpoints
SELECT record FROM checkpoints WHERE task_id = :task_id ORDER BY number

-- name: list_checkpoint_ages
SELECT task_id, number, created_at FROM checkpoints ORDER BY task_id, number DESC

-- name: list_task_checkpoint_ages
SELECT task_id, number, created_at FROM checkpoints WHERE task_id = :task_id ORDER BY number DESC

-- name: delete_checkpoint
DELETE FROM checkpoints WHERE task_id = :task_id AND number = :number

-- name: get_session
SELECT record FROM sessions WHERE id = :id

-- name: insert_session
INSERT INTO sessions (id, version, updated_at, record) VALUES (:id, :version, :updated_at, :record)
ON CONFLICT (id) DO NOTHING

-- name: update_session
UPDATE sessions SET version = :version, updated_at = :updated_at, record = :record
WHERE id = :id AND version = :expected_version

-- name: list_sessions
SELECT record FROM sessions ORDER BY updated_at DESC, id

-- name: get_lease
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM leases WHERE task_id = :task_id

-- name: held_leases
-- Every lease not released (live or expired): who holds which task (`ratchet serve`'s workers).
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM leases WHERE released = 0 ORDER BY owner, task_id

-- name: claim_lease
-- Granted when the task has no lease, or its lease was released, expired or
-- is taken over (took_over says whether it was still live): any lease, or only
-- the one whose token is given as replacing. No row comes back when the claim is refused.
INSERT INTO leases AS l (task_id, owner, host, pid, pid_space, pid_started, token, expires_at,
                         released, granted_at, took_over)
VALUES (:task_id, :owner, :host, :pid, :pid_space, :pid_started, 1, :expires_at, 0, :now, 0)
ON CONFLICT (task_id) DO UPDATE SET
    owner = excluded.owner, host = excluded.host, pid = excluded.pid,
    pid_space = excluded.pid_space, pid_started = excluded.pid_started, token = l.token + 1,
    expires_at = excluded.expires_at, released = 0, granted_at = excluded.granted_at,
    took_over = NOT l.released AND l.expires_at > excluded.granted_at, renewed_at = NULL
WHERE l.released OR l.expires_at <= excluded.granted_at OR :take_over OR l.token = :replacing
RETURNING task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
          took_over

-- name: claim_tasks
-- The orphans of list_orphaned_tasks (but those in the JSON array :skip, and those whose
-- queue is full), leased in one statement. Each row is the lease, then the task's place in
-- line (priority, created_at, rowid): RETURNING gives rows in no set order.
INSERT INTO leases AS l (task_id, owner, host, pid, pid_space, pid_started, token, expires_at,
                         released, granted_at, took_over)
SELECT t.id, :owner, :host, :pid, :pid_space, :pid_started, COALESCE(old.token, 0) + 1, :expires_at,
       0, :now, 0
FROM tasks t
LEFT JOIN leases old ON old.task_id = t.id
WHERE (t.status IN ('queued', 'running') OR (t.status = 'waiting' AND t.waiting_on IN ('timer', 'limit'))
       OR (t.status = 'waiting' AND t.waiting_on = 'children' AND NOT EXISTS (
           SELECT 1 FROM tasks c WHERE c.parent_id = t.id
             AND c.status NOT IN ('completed', 'failed', 'cancelled'))))
  AND (old.task_id IS NULL OR old.released = 1 OR old.expires_at <= :now)
  AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
  AND t.id NOT IN (SELECT value FROM json_each(:skip))
  AND (t.queue_name IS NULL OR NOT EXISTS (
      SELECT 1 FROM limits m WHERE m.key = 'queue:' || t.queue_name AND m.concurrency <= (
          SELECT COUNT(*) FROM tasks o JOIN leases ol ON ol.task_id = o.id
          WHERE o.queue_name = t.queue_name AND o.queue_partition IS t.queue_partition
            AND ol.released = 0 AND ol.expires_at > :now)))
ORDER BY t.priority, t.created_at, t.rowid
LIMIT :limit
ON CONFLICT (task_id) DO UPDATE SET
    owner = excluded.owner, host = excluded.host, pid = excluded.pid,
    pid_space = excluded.pid_space, pid_started = excluded.pid_started, token = excluded.token,
    expires_at = excluded.expires_at, released = 0, granted_at = excluded.granted_at,
    took_over = 0, renewed_at = NULL
RETURNING task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
          took_over,
          (SELECT t.priority FROM tasks t WHERE t.id = task_id),
          (SELECT t.created_at FROM tasks t WHERE t.id = task_id),
          (SELECT t.rowid FROM tasks t WHERE t.id = task_id)

-- name: record_lease_claim
INSERT INTO lease_claims (task_id, token, owner, host, pid, pid_space, pid_started, expires_at,
                          granted_at, took_over)
VALUES (:task_id, :token, :owner, :host, :pid, :pid_space, :pid_started, :expires_at, :granted_at,
        :took_over)

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
  AND l.released = 0 AND l.expires_at > :now AND l.host = :host AND l.pid_space = :pid_space
  AND NOT EXISTS (SELECT 1 FROM triggers g WHERE g.task_id = t.id)
ORDER BY t.priority, t.created_at, t.rowid

-- name: renew_lease
UPDATE leases SET expires_at = :expires_at, renewed_at = :renewed_at
WHERE task_id = :task_id AND token = :token AND released = 0

-- name: renew_lease_claim
UPDATE lease_claims SET expires_at = :expires_at, renewed_at = :renewed_at
WHERE task_id = :task_id AND token = :token

-- name: release_lease
UPDATE leases SET released = 1 WHERE task_id = :task_id AND token = :token AND released = 0

-- name: release_lease_claim
UPDATE lease_claims SET released = 1, expires_at = MIN(expires_at, :now)
WHERE task_id = :task_id AND token = :token

-- name: lease_history
SELECT task_id, owner, token, expires_at, host, pid, pid_space, pid_started, released, granted_at,
       took_over, renewed_at
FROM lease_claims WHERE task_id = :task_id ORDER BY token

-- name: record_worker
-- A worker starting, or its heartbeat: its row, replaced whole.
INSERT INTO workers (name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at)
VALUES (:name, :host, :pid, :concurrency, :lease_ttl, :started_at, :heartbeat_at, :expires_at)
ON CONFLICT (name) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, concurrency = excluded.concurrency,
    lease_ttl = excluded.lease_ttl, started_at = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at

-- name: remove_worker
DELETE FROM workers WHERE name = :name

-- name: list_workers
SELECT name, host, pid, concurrency, lease_ttl, started_at, heartbeat_at, expires_at
FROM workers WHERE expires_at > :now ORDER BY name

-- name: forget_workers
DELETE FROM workers WHERE expires_at <= :now

-- name: insert_approval
INSERT INTO approvals (task_id, seq, status, requested_at, record)
VALUES (:task_id, :seq, :status, :requested_at, :record)
ON CONFLICT (task_id, seq) DO NOTHING

-- name: get_approval
SELECT task_id, seq, status, record FROM approvals WHERE task_id = :task_id AND seq = :seq

-- name: update_approval
UPDATE approvals SET status = :status, record = :record
WHERE task_id = :task_id AND seq = :seq AND status = 'pending'

-- name: list_approvals
SELECT task_id, seq, status, record FROM approvals
WHERE (:task_id IS NULL OR task_id = :task_id) AND (:status IS NULL OR status = :status)
ORDER BY requested_at, task_id, seq

-- name: next_inbox_seq
SELECT COALESCE(MAX(seq), 0) + 1 FROM inbox WHERE task_id = :task_id

-- name: insert_inbox_message
INSERT INTO inbox (task_id, seq, name, sent_at, taken_by, record)
VALUES (:task_id, :seq, :name, :sent_at, NULL, :record)

-- name: pending_inbox_messages
SELECT record FROM inbox
WHERE task_id = :task_id AND name = :name AND taken_by IS NULL
ORDER BY seq LIMIT COALESCE(:limit, -1)

-- name: take_inbox_message
UPDATE inbox SET taken_by = :taken_by, record = :record
WHERE task_id = :task_id AND seq = :seq AND taken_by IS NULL

-- name: list_inbox
SELECT record FROM inbox
WHERE task_id = :task_id AND (:pending_only = 0 OR taken_by IS NULL)
ORDER BY seq

-- name: next_stream_offset
SELECT COALESCE(MAX(position) + 1, 0) FROM streams WHERE task_id = :task_id

-- name: task_exists
SELECT 1 FROM tasks WHERE id = :id

-- name: stream_value
SELECT record FROM streams WHERE task_id = :task_id AND kind = 'value' AND seq = :seq

-- name: insert_stream_entry
INSERT INTO streams (task_id, position, kind, seq, record)
VALUES (:task_id, :offset, :kind, :seq, :record)

-- SQLite's change feeds look again every poll: nothing to notify.
-- name: notify_stream
SELECT 0

-- name: read_stream
SELECT record FROM streams
WHERE task_id = :task_id AND position >= :from_offset
ORDER BY position LIMIT :limit

-- name: insert_grant
INSERT INTO task_grants (task_id, agent, granted_by, granted_at)
VALUES (:task_id, :agent, :granted_by, :granted_at)
ON CONFLICT (task_id, agent) DO NOTHING

-- name: list_grants
SELECT agent, granted_by, granted_at FROM task_grants
WHERE task_id = :task_id ORDER BY granted_at, agent

-- name: next_task_change_position
SELECT COALESCE(MAX(position), 0) + 1 FROM task_changes

-- name: insert_task_change
INSERT INTO task_changes (position, task_id, time, record)
VALUES (:position, :task_id, :time, :record)

-- name: notify_task_changes
SELECT 0

-- name: list_task_changes
SELECT position, record FROM task_changes WHERE position > :after ORDER BY position LIMIT COALESCE(:limit, -1)

-- name: last_task_change
SELECT MAX(position) FROM task_changes

-- The task listing (store/sql/task_rows.py): a query is made of the blocks below, joined in
-- order (catalogue: NAME+NAME+...): a select (the rows or their count), the rows it starts
-- from (its leading filter, whose index it walks), a condition for each other filter given,
-- then for a page the place it starts after, its order and its limit.

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
FROM task_search s JOIN task_text x ON x.id = s.rowid JOIN tasks t ON t.id = x.task_id
WHERE task_search MATCH (SELECT group_concat('"' || value || '"*', ' AND ') FROM json_each(:words))

-- name: task_rows_from_label
FROM task_labels l JOIN tasks t ON t.id = l.task_id
WHERE l.key = :label_key AND l.value = :label_value

-- name: task_rows_from_parent
FROM tasks t WHERE t.parent_id = :parent_id

-- name: task_rows_from_name
FROM tasks t WHERE t.name = :name

-- name: task_rows_from_agent
FROM tasks t WHERE t.agent = :agent

-- The range of ids that start with the prefix (an index of ids); task_rows_where_id_prefix checks it.
-- name: task_rows_from_id_prefix
FROM tasks t WHERE t.id >= :id_prefix AND t.id < :id_prefix_end

-- The creation times, as a range of the index the rows are walked in (all, parent, name, agent).
-- name: task_rows_created_in
AND t.created_at >= :since AND t.created_at < :until

-- The creation times, checked on each row (+: not a range to walk, whose order is not the one asked).
-- name: task_rows_created_within
AND +t.created_at >= :since AND +t.created_at < :until

-- name: task_rows_where_statuses
AND t.status IN (SELECT value FROM json_each(:statuses))

-- name: task_rows_where_waiting_on
AND t.waiting_on IN (SELECT value FROM json_each(:waiting_on))

-- name: task_rows_where_name
AND t.name = :name

-- name: task_rows_where_agent
AND t.agent = :agent

-- name: task_rows_where_model
AND t.model = :model

-- name: task_rows_where_code_version
AND t.code_version = :code_version

-- name: task_rows_where_parent
AND t.parent_id = :parent_id

-- name: task_rows_where_id_prefix
AND substr(t.id, 1, length(:id_prefix)) = :id_prefix

-- name: task_rows_where_min_cost
AND t.cost >= :min_cost

-- name: task_rows_where_max_cost
AND t.cost <= :max_cost

-- Last changed before a time: what retention deletes walks tasks_by_updated up to it.
-- name: task_rows_where_updated_before
AND t.updated_at < :updated_before

-- Every label given (a JSON object: those the rows' lead does not hold already) is one of the task's.
-- name: task_rows_where_labels
AND NOT EXISTS (
    SELECT 1 FROM json_each(:labels) wanted
    WHERE NOT EXISTS (SELECT 1 FROM task_labels has
                      WHERE has.task_id = t.id AND has.key = wanted.key AND has.value = wanted.value))

-- name: task_rows_after_created_asc
AND (t.created_at, t.id) > (:after_created, :after_id)

-- name: task_rows_after_created_desc
AND (t.created_at, t.id) < (:after_created, :after_id)

-- name: task_rows_after_updated_asc
AND (t.updated_at, t.created_at, t.id) > (:after_value, :after_created, :after_id)

-- name: task_rows_after_updated_desc
AND (t.updated_at, t.created_at, t.id) < (:after_value, :after_created, :after_id)

-- name: task_rows_after_name_asc
AND (t.name, t.created_at, t.id) > (:after_value, :after_created, :after_id)

-- name: task_rows_after_name_desc
AND (t.name, t.created_at, t.id) < (:after_value, :after_created, :after_id)

-- name: task_rows_after_status_asc
AND (t.status, t.created_at, t.id) > (:after_value, :after_created, :after_id)

-- name: task_rows_after_status_desc
AND (t.status, t.created_at, t.id) < (:after_value, :after_created, :after_id)

-- name: task_rows_after_cost_asc
AND (t.cost, t.created_at, t.id) > (:after_value, :after_created, :after_id)

-- name: task_rows_after_cost_desc
AND (t.cost, t.created_at, t.id) < (:after_value, :after_created, :after_id)

-- name: task_rows_order_created_asc
ORDER BY t.created_at, t.id

-- name: task_rows_order_created_desc
ORDER BY t.created_at DESC, t.id DESC

-- name: task_rows_order_updated_asc
ORDER BY t.updated_at, t.created_at, t.id

-- name: task_rows_order_updated_desc
ORDER BY t.updated_at DESC, t.created_at DESC, t.id DESC

-- name: task_rows_order_name_asc
ORDER BY t.name, t.created_at, t.id

-- name: task_rows_order_name_desc
ORDER BY t.name DESC, t.created_at DESC, t.id DESC

-- name: task_rows_order_status_asc
ORDER BY t.status, t.created_at, t.id

-- name: task_rows_order_status_desc
ORDER BY t.status DESC, t.created_at DESC, t.id DESC

-- name: task_rows_order_cost_asc
ORDER BY t.cost, t.created_at, t.id

-- name: task_rows_order_cost_desc
ORDER BY t.cost DESC, t.created_at DESC, t.id DESC

-- name: task_rows_page
LIMIT COALESCE(:limit, -1) OFFSET :offset

-- What finds a task (store/sql/task_rows.py): its labels, given when it is made, and the words
-- it is searched by (a JSON array), put when it is made and again when it ends.

-- name: insert_task_labels
INSERT INTO task_labels (task_id, key, value) SELECT :task_id, key, value FROM json_each(:labels)

-- name: put_task_words
INSERT INTO task_text (task_id, words) VALUES (:task_id, (SELECT group_concat(value, ' ') FROM json_each(:words)))
ON CONFLICT (task_id) DO UPDATE SET words = excluded.words

-- name: task_records_after
-- The records of the tasks stored before the search index (migration 16), a batch at a time.
SELECT id, status, record FROM tasks WHERE id > :after ORDER BY id LIMIT :limit

-- contents (store/sql/content.py): a task's content-addressed values, each stored once.

-- name: put_content
INSERT INTO contents (task_id, hash, prev, body) VALUES (:task_id, :hash, NULL, :body)
ON CONFLICT (task_id, hash) DO NOTHING

-- name: put_content_after
-- A list stored as the list it extends (prev) and its new items: only when prev is stored (else 0 rows).
INSERT INTO contents (task_id, hash, prev, body)
SELECT :task_id, :hash, :prev, :body
WHERE EXISTS (SELECT 1 FROM contents WHERE task_id = :task_id AND hash = :prev)
ON CONFLICT (task_id, hash) DO NOTHING

-- name: has_content
SELECT 1 FROM contents WHERE task_id = :task_id AND hash = :hash

-- name: get_contents
-- The rows of the hashes given (a JSON array), and of every list each extends, back to its start.
WITH RECURSIVE wanted(hash) AS (
    SELECT value FROM json_each(:hashes)
    UNION
    SELECT c.prev FROM contents c JOIN wanted w ON c.hash = w.hash
    WHERE c.task_id = :task_id AND c.prev IS NOT NULL
)
SELECT c.hash, c.prev, c.body FROM contents c JOIN wanted w ON c.hash = w.hash
WHERE c.task_id = :task_id

-- delete_task (store/sql/task_delete.py): every row of one task, table by table.

-- name: delete_task_steps
DELETE FROM steps WHERE task_id = :task_id

-- name: delete_task_operations
DELETE FROM operations WHERE task_id = :task_id

-- name: delete_task_contents
DELETE FROM contents WHERE task_id = :task_id

-- name: delete_task_messages
DELETE FROM messages WHERE thread_id = :task_id

-- name: delete_task_events
DELETE FROM events WHERE task_id = :task_id

-- name: delete_task_artifacts
DELETE FROM artifacts WHERE task_id = :task_id

-- name: delete_task_triggers
DELETE FROM triggers WHERE task_id = :task_id

-- name: delete_task_checkpoints
DELETE FROM checkpoints WHERE task_id = :task_id

-- name: delete_task_approvals
DELETE FROM approvals WHERE task_id = :task_id

-- name: delete_task_inbox
DELETE FROM inbox WHERE task_id = :task_id

-- name: delete_task_streams
DELETE FROM streams WHERE task_id = :task_id

-- name: delete_task_task_grants
DELETE FROM task_grants WHERE task_id = :task_id

-- name: delete_task_lease_claims
DELETE FROM lease_claims WHERE task_id = :task_id

-- name: delete_task_leases
DELETE FROM leases WHERE task_id = :task_id

-- name: delete_task_task_labels
DELETE FROM task_labels WHERE task_id = :task_id

-- name: delete_task_task_text
DELETE FROM task_text WHERE task_id = :task_id

-- name: delete_task_tasks
DELETE FROM tasks WHERE id = :task_id

-- LangGraph's checkpoints (store/sql/langgraph.py).

-- name: put_langgraph_value
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
VALUES (:thread_id, :hash, NULL, NULL, :type, :body)
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: put_langgraph_value_after
-- A value stored as the value it extends (prev) and its new items: only when prev is stored (else 0 rows).
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
SELECT :thread_id, :hash, :prev, :items, :type, :body
WHERE EXISTS (SELECT 1 FROM langgraph_values WHERE thread_id = :thread_id AND hash = :prev)
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: has_langgraph_value
SELECT 1 FROM langgraph_values WHERE thread_id = :thread_id AND hash = :hash

-- name: get_langgraph_values
-- The values of the hashes given (a JSON array), and of every value each extends or takes its items
-- from, back to whole ones.
WITH RECURSIVE wanted(hash) AS (
    SELECT value FROM json_each(:hashes)
    UNION
    SELECT v.prev FROM langgraph_values v JOIN wanted w ON v.hash = w.hash
    WHERE v.thread_id = :thread_id AND v.prev IS NOT NULL
    UNION
    SELECT v.items FROM langgraph_values v JOIN wanted w ON v.hash = w.hash
    WHERE v.thread_id = :thread_id AND v.items IS NOT NULL
)
SELECT v.hash, v.prev, v.items, v.type, v.body FROM langgraph_values v JOIN wanted w ON v.hash = w.hash
WHERE v.thread_id = :thread_id

-- name: put_langgraph_checkpoint
INSERT INTO langgraph_checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values)
VALUES (:thread_id, :ns, :checkpoint_id, :parent_id, :run_id, :type, :body, :metadata, :values)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET
    parent_id = excluded.parent_id, run_id = excluded.run_id, type = excluded.type, body = excluded.body,
    metadata = excluded.metadata, channel_values = excluded.channel_values

-- name: get_langgraph_checkpoint
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id

-- name: latest_langgraph_checkpoint
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = :thread_id AND checkpoint_ns = :ns
ORDER BY checkpoint_id DESC LIMIT 1

-- name: list_langgraph_checkpoints
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE thread_id = :thread_id AND (:ns IS NULL OR checkpoint_ns = :ns)
  AND (:before IS NULL OR checkpoint_id < :before)
ORDER BY checkpoint_id DESC, checkpoint_ns LIMIT :limit OFFSET :offset

-- name: list_all_langgraph_checkpoints
SELECT thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values
FROM langgraph_checkpoints
WHERE (:ns IS NULL OR checkpoint_ns = :ns) AND (:before IS NULL OR checkpoint_id < :before)
ORDER BY checkpoint_id DESC, thread_id, checkpoint_ns LIMIT :limit OFFSET :offset

-- name: claim_langgraph_checkpoint_writes
-- A task's first writes on a checkpoint go in the checkpoint's row when it is stored and no task took
-- it (and the task has no row in langgraph_writes): else 0 rows, and they go to langgraph_writes.
UPDATE langgraph_checkpoints SET task_id = :task_id, task_path = :task_path, task_writes = :writes,
    write_hashes = :value_hashes
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id
  AND task_id IS NULL AND NOT EXISTS (
    SELECT 1 FROM langgraph_writes w WHERE w.thread_id = :thread_id AND w.checkpoint_ns = :ns
      AND w.checkpoint_id = :checkpoint_id AND w.task_id = :task_id
)

-- name: get_langgraph_checkpoint_writes
SELECT task_path, task_writes, write_hashes FROM langgraph_checkpoints
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id AND task_id = :task_id

-- name: update_langgraph_checkpoint_writes
UPDATE langgraph_checkpoints SET task_path = :task_path, task_writes = :writes, write_hashes = :value_hashes
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id AND task_id = :task_id

-- name: put_langgraph_task_writes
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
VALUES (:thread_id, :ns, :checkpoint_id, :task_id, :task_path, :writes, :value_hashes)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: get_langgraph_task_writes
SELECT task_path, writes, value_hashes FROM langgraph_writes
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id
  AND task_id = :task_id

-- name: update_langgraph_task_writes
UPDATE langgraph_writes SET task_path = :task_path, writes = :writes, value_hashes = :value_hashes
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id = :checkpoint_id
  AND task_id = :task_id

-- name: list_langgraph_writes
-- The writes in langgraph_writes, and those in the checkpoints' rows.
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes
FROM langgraph_writes
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id BETWEEN :low AND :high
UNION ALL
SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, task_writes, write_hashes
FROM langgraph_checkpoints
WHERE thread_id = :thread_id AND checkpoint_ns = :ns AND checkpoint_id BETWEEN :low AND :high AND task_id IS NOT NULL

-- name: delete_langgraph_thread_writes
DELETE FROM langgraph_writes WHERE thread_id = :thread_id

-- name: delete_langgraph_thread_checkpoints
DELETE FROM langgraph_checkpoints WHERE thread_id = :thread_id

-- name: delete_langgraph_thread_values
DELETE FROM langgraph_values WHERE thread_id = :thread_id

-- name: langgraph_threads_of_runs
SELECT DISTINCT thread_id FROM langgraph_checkpoints WHERE run_id IN (SELECT value FROM json_each(:runs))

-- name: delete_langgraph_run_writes
DELETE FROM langgraph_writes WHERE (thread_id, checkpoint_ns, checkpoint_id) IN (
    SELECT thread_id, checkpoint_ns, checkpoint_id FROM langgraph_checkpoints
    WHERE run_id IN (SELECT value FROM json_each(:runs))
)

-- name: delete_langgraph_run_checkpoints
DELETE FROM langgraph_checkpoints WHERE run_id IN (SELECT value FROM json_each(:runs))

-- name: prune_langgraph_writes
-- Every write of the thread but those of each namespace's latest checkpoint.
DELETE FROM langgraph_writes WHERE thread_id = :thread_id AND checkpoint_id IS NOT (
    SELECT max(c.checkpoint_id) FROM langgraph_checkpoints c
    WHERE c.thread_id = :thread_id AND c.checkpoint_ns = langgraph_writes.checkpoint_ns
)

-- name: prune_langgraph_checkpoints
DELETE FROM langgraph_checkpoints WHERE thread_id = :thread_id AND checkpoint_id < (
    SELECT max(c.checkpoint_id) FROM langgraph_checkpoints c
    WHERE c.thread_id = :thread_id AND c.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
)

-- name: collect_langgraph_values
-- Every value of the thread that no checkpoint or pending write of it reaches, directly or through the
-- values they extend or take their items from.
DELETE FROM langgraph_values WHERE thread_id = :thread_id AND hash NOT IN (
    WITH RECURSIVE reached(hash) AS (
        SELECT j.value FROM langgraph_checkpoints c, json_each(c.channel_values) j
        WHERE c.thread_id = :thread_id
        UNION
        SELECT j.value FROM langgraph_writes w, json_each(w.value_hashes) j
        WHERE w.thread_id = :thread_id AND w.value_hashes IS NOT NULL
        UNION
        SELECT j.value FROM langgraph_checkpoints c, json_each(c.write_hashes) j
        WHERE c.thread_id = :thread_id AND c.write_hashes IS NOT NULL
        UNION
        SELECT v.prev FROM langgraph_values v JOIN reached r ON v.hash = r.hash
        WHERE v.thread_id = :thread_id AND v.prev IS NOT NULL
        UNION
        SELECT v.items FROM langgraph_values v JOIN reached r ON v.hash = r.hash
        WHERE v.thread_id = :thread_id AND v.items IS NOT NULL
    )
    SELECT hash FROM reached WHERE hash IS NOT NULL
)

-- name: copy_langgraph_checkpoints
INSERT INTO langgraph_checkpoints
    (thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values,
     task_id, task_path, task_writes, write_hashes)
SELECT :target, checkpoint_ns, checkpoint_id, parent_id, run_id, type, body, metadata, channel_values,
    task_id, task_path, task_writes, write_hashes
FROM langgraph_checkpoints WHERE thread_id = :source
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO NOTHING

-- name: copy_langgraph_writes
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
SELECT :target, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes
FROM langgraph_writes WHERE thread_id = :source
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: copy_langgraph_checkpoint_writes
-- The writes in the source's checkpoint rows that the target's rows do not hold (a checkpoint the
-- target had already), to the target's langgraph_writes.
INSERT INTO langgraph_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes)
SELECT :target, s.checkpoint_ns, s.checkpoint_id, s.task_id, s.task_path, s.task_writes, s.write_hashes
FROM langgraph_checkpoints s
WHERE s.thread_id = :source AND s.task_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM langgraph_checkpoints t
    WHERE t.thread_id = :target AND t.checkpoint_ns = s.checkpoint_ns AND t.checkpoint_id = s.checkpoint_id
      AND t.task_id = s.task_id
)
ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO NOTHING

-- name: copy_langgraph_values
INSERT INTO langgraph_values (thread_id, hash, prev, items, type, body)
SELECT :target, hash, prev, items, type, body FROM langgraph_values WHERE thread_id = :source
ON CONFLICT (thread_id, hash) DO NOTHING

-- name: set_limit
INSERT INTO limits (key, rpm, tpm, concurrency) VALUES (:key, :rpm, :tpm, :concurrency)
ON CONFLICT (key) DO UPDATE SET rpm = excluded.rpm, tpm = excluded.tpm, concurrency = excluded.concurrency
RETURNING key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until

-- name: delete_limit
DELETE FROM limits WHERE key = :key

-- name: delete_limit_slots
DELETE FROM limit_slots WHERE key = :key

-- name: list_limits
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits ORDER BY key

-- name: limits_of
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits
WHERE key IN (SELECT value FROM json_each(:keys)) ORDER BY key

-- name: lock_limits
-- BEGIN IMMEDIATE already holds the file: the rows are this transaction's until it commits.
SELECT key, rpm, tpm, concurrency, next_request_at, next_token_at, blocked_until FROM limits
WHERE key IN (SELECT value FROM json_each(:keys)) ORDER BY key

-- name: pace_limit
UPDATE limits SET next_request_at = :next_request_at, next_token_at = :next_token_at WHERE key = :key

-- name: block_limit
INSERT INTO limits (key, blocked_until) VALUES (:key, :until)
ON CONFLICT (key) DO UPDATE SET blocked_until = MAX(blocked_until, excluded.blocked_until)

-- name: drop_limit_turns
DELETE FROM limit_turns WHERE at < :before

-- name: get_limit_turn
SELECT at FROM limit_turns WHERE holder = :holder

-- name: delete_limit_turn
DELETE FROM limit_turns WHERE holder = :holder

-- name: put_limit_turn
INSERT INTO limit_turns (holder, at) VALUES (:holder, :at)
ON CONFLICT (holder) DO UPDATE SET at = excluded.at

-- name: drop_dead_limit_slots
-- The slots whose lease is no longer live: its task ended, waits, or its worker died.
DELETE FROM limit_slots WHERE key = :key AND NOT EXISTS (
    SELECT 1 FROM leases l WHERE l.task_id = limit_slots.task_id AND l.token = limit_slots.token
      AND l.released = 0 AND l.expires_at > :now)

-- name: count_limit_slots
SELECT COUNT(*) FROM limit_slots s
JOIN leases l ON l.task_id = s.task_id AND l.token = s.token
WHERE s.key = :key AND l.released = 0 AND l.expires_at > :now

-- name: put_limit_slot
INSERT INTO limit_slots (key, holder, task_id, token) VALUES (:key, :holder, :task_id, :token)
ON CONFLICT (key, holder) DO UPDATE SET task_id = excluded.task_id, token = excluded.token

-- name: release_limit_slots
DELETE FROM limit_slots WHERE holder = :holder

-- name: queue_give_back
-- Release the lease when the tasks of its task's queue (and partition) holding a live lease,
-- its own included, are more than the queue's concurrency.
UPDATE leases SET released = 1
WHERE task_id = :task_id AND token = :token AND released = 0 AND EXISTS (
    SELECT 1 FROM tasks t JOIN limits m ON m.key = 'queue:' || t.queue_name
    WHERE t.id = :task_id AND m.concurrency < (
        SELECT COUNT(*) FROM tasks o JOIN leases ol ON ol.task_id = o.id
        WHERE o.queue_name = t.queue_name AND o.queue_partition IS t.queue_partition
          AND ol.released = 0 AND ol.expires_at > :now))
-- name: set_spend_cap
-- A cap set, or set again: its limit and approval replaced, its created_at and spend kept.
INSERT INTO spend_caps (scope, name, daily, approve_over, created_at, updated_at)
VALUES (:scope, :name, :daily, :approve_over, :created_at, :updated_at)
ON CONFLICT (scope, name) DO UPDATE SET
    daily = excluded.daily, approve_over = excluded.approve_over, updated_at = excluded.updated_at
RETURNING scope, name, daily, approve_over, created_at, updated_at

-- name: delete_spend_cap
DELETE FROM spend_caps WHERE scope = :scope AND name = :name

-- name: delete_spend_days
DELETE FROM spend_days WHERE scope = :scope AND name = :name

-- name: list_spend_caps
SELECT c.scope, c.name, c.daily, c.approve_over, c.created_at, c.updated_at, d.spent, d.pressure_told
FROM spend_caps c
LEFT JOIN spend_days d ON d.scope = c.scope AND d.name = c.name AND d.day = :day
ORDER BY c.scope, c.name

-- name: spend_for_task
-- The caps covering one task: its agent's (the tasks row), its labels' (task_labels, by key).
SELECT c.scope, c.name, c.daily, c.approve_over, c.created_at, c.updated_at, d.spent, d.pressure_told
FROM spend_caps c
LEFT JOIN spend_days d ON d.scope = c.scope AND d.name = c.name AND d.day = :day
WHERE (c.scope = 'agent' AND c.name = (SELECT agent FROM tasks WHERE id = :task_id))
   OR (c.scope = 'label' AND c.name IN (SELECT key || '=' || value FROM task_labels WHERE task_id = :task_id))
ORDER BY c.scope, c.name

-- name: count_spend
-- A priced model call's cost, added to each covering cap's day: one statement, with the call's record.
INSERT INTO spend_days (scope, name, day, spent)
SELECT c.scope, c.name, :day, :cost FROM spend_caps c
WHERE (c.scope = 'agent' AND c.name = (SELECT agent FROM tasks WHERE id = :task_id))
   OR (c.scope = 'label' AND c.name IN (SELECT key || '=' || value FROM task_labels WHERE task_id = :task_id))
ON CONFLICT (scope, name, day) DO UPDATE SET spent = spend_days.spent + excluded.spent

-- name: mark_spend_pressure
UPDATE spend_days SET pressure_told = TRUE
WHERE scope = :scope AND name = :name AND day = :day AND pressure_told = FALSE

-- name: cost_totals
-- What model calls cost by UTC day, agent and model: each call that succeeded, under the model
-- its input names (the "$content" wrapper's value when its large parts were stored apart), else
-- its task's. A full read of the journal's model calls in the window: a report, not a hot path.
SELECT strftime('%Y-%m-%d', o.finished_at / 1000000, 'unixepoch') AS day,
       t.agent AS agent,
       COALESCE(
           CASE WHEN json_extract(o.input, '$."$content"') IS NOT NULL
                THEN json_extract(o.input, '$.value.model') ELSE json_extract(o.input, '$.model') END,
           t.model, 'unknown'
       ) AS model,
       COUNT(*),
       SUM(CASE WHEN json_extract(o.meta, '$.usage.cost') IS NULL THEN 1 ELSE 0 END),
       SUM(COALESCE(json_extract(o.meta, '$.usage.prompt_tokens'), 0)
           + COALESCE(json_extract(o.meta, '$.usage.completion_tokens'), 0)),
       SUM(COALESCE(json_extract(o.meta, '$.usage.cost'), 0))
FROM operations o JOIN tasks t ON t.id = o.task_id
WHERE o.kind = 'model' AND o.status = 'succeeded' AND o.finished_at IS NOT NULL
  AND (:since IS NULL OR o.finished_at >= :since)
  AND (:until IS NULL OR o.finished_at < :until)
GROUP BY 1, 2, 3  -- by position: a name would be the tasks' model column, not the model above
ORDER BY 1, 2, 3
