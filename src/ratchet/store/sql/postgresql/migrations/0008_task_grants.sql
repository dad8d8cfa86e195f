-- Task grants: an agent other than the task's own that may write it
-- (`grant` over MCP); once per task and agent. granted_by is the agent
-- that gave the leave (NULL when a person did).

CREATE TABLE task_grants (
    task_id     TEXT NOT NULL,
    agent       TEXT NOT NULL,
    granted_by  TEXT,
    granted_at  BIGINT NOT NULL,
    PRIMARY KEY (task_id, agent)
);
