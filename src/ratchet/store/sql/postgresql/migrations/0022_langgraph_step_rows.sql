-- A step of a LangGraph graph in one row (store/sql/langgraph.py): the pending writes of the first
-- task that writes on a checkpoint (a step's one task, most often) are columns of the checkpoint's
-- row, not a row of langgraph_writes, which repeated the row's key and had an index entry of its
-- own. The writes of any other task on it, or of a checkpoint not stored (yet), stay in
-- langgraph_writes. write_hashes is what value_hashes is to a langgraph_writes row.
-- Stored rows move: each checkpoint takes the writes of its task that sorts first.
-- A checkpoint's metadata is bytes: deflated JSON, or JSON as it was (store/sql/langgraph_deflate.py).

ALTER TABLE langgraph_checkpoints ADD COLUMN task_id BYTEA;
ALTER TABLE langgraph_checkpoints ADD COLUMN task_path TEXT;
ALTER TABLE langgraph_checkpoints ADD COLUMN task_writes BYTEA;
ALTER TABLE langgraph_checkpoints ADD COLUMN write_hashes TEXT;
ALTER TABLE langgraph_checkpoints ALTER COLUMN metadata TYPE BYTEA USING convert_to(metadata, 'UTF8');

UPDATE langgraph_checkpoints c SET
    task_id = w.task_id, task_path = w.task_path, task_writes = w.writes, write_hashes = w.value_hashes
FROM (
    SELECT DISTINCT ON (thread_id, checkpoint_ns, checkpoint_id)
        thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, writes, value_hashes
    FROM langgraph_writes
    ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_id
) w
WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns AND c.checkpoint_id = w.checkpoint_id;

DELETE FROM langgraph_writes w USING langgraph_checkpoints c
WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns
  AND c.checkpoint_id = w.checkpoint_id AND c.task_id = w.task_id;
