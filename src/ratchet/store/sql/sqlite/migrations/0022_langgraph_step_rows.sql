-- A step of a LangGraph graph in one row (store/sql/langgraph.py): the pending writes of the first
-- task that writes on a checkpoint (a step's one task, most often) are columns of the checkpoint's
-- row, not a row of langgraph_writes, which repeated the row's key and had an index entry of its
-- own. The writes of any other task on it, or of a checkpoint not stored (yet), stay in
-- langgraph_writes. write_hashes is what value_hashes is to a langgraph_writes row.
-- Stored rows move: each checkpoint takes the writes of its task that sorts first.
-- Since then a checkpoint's metadata is stored as a BLOB in its TEXT column: deflated JSON, or JSON as
-- it was (store/sql/langgraph_deflate.py); rows stored before keep their text and read as they are.

ALTER TABLE langgraph_checkpoints ADD COLUMN task_id BLOB;
ALTER TABLE langgraph_checkpoints ADD COLUMN task_path TEXT;
ALTER TABLE langgraph_checkpoints ADD COLUMN task_writes BLOB;
ALTER TABLE langgraph_checkpoints ADD COLUMN write_hashes TEXT;

UPDATE langgraph_checkpoints SET task_id = (
    SELECT min(w.task_id) FROM langgraph_writes w
    WHERE w.thread_id = langgraph_checkpoints.thread_id
      AND w.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
      AND w.checkpoint_id = langgraph_checkpoints.checkpoint_id
);

UPDATE langgraph_checkpoints SET
    task_path = (
        SELECT w.task_path FROM langgraph_writes w
        WHERE w.thread_id = langgraph_checkpoints.thread_id
          AND w.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
          AND w.checkpoint_id = langgraph_checkpoints.checkpoint_id AND w.task_id = langgraph_checkpoints.task_id
    ),
    task_writes = (
        SELECT w.writes FROM langgraph_writes w
        WHERE w.thread_id = langgraph_checkpoints.thread_id
          AND w.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
          AND w.checkpoint_id = langgraph_checkpoints.checkpoint_id AND w.task_id = langgraph_checkpoints.task_id
    ),
    write_hashes = (
        SELECT w.value_hashes FROM langgraph_writes w
        WHERE w.thread_id = langgraph_checkpoints.thread_id
          AND w.checkpoint_ns = langgraph_checkpoints.checkpoint_ns
          AND w.checkpoint_id = langgraph_checkpoints.checkpoint_id AND w.task_id = langgraph_checkpoints.task_id
    )
WHERE task_id IS NOT NULL;

DELETE FROM langgraph_writes WHERE EXISTS (
    SELECT 1 FROM langgraph_checkpoints c
    WHERE c.thread_id = langgraph_writes.thread_id AND c.checkpoint_ns = langgraph_writes.checkpoint_ns
      AND c.checkpoint_id = langgraph_writes.checkpoint_id AND c.task_id = langgraph_writes.task_id
);
