-- The fence as a statement that fails: a fenced transaction sends it with its
-- first statement in one round trip (pipeline mode), unread, so the check must
-- abort the transaction itself when the writer's lease is not current.
-- SQLSTATE RLOST is Ratchet's own; the driver turns it into LeaseLost.
-- The lease row stays locked FOR SHARE until the commit: no claim replaces it before.

CREATE FUNCTION ratchet_check_fence(fenced_task TEXT, fenced_token BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
DECLARE
    current_token BIGINT;
    is_released BOOLEAN;
BEGIN
    SELECT token, released INTO current_token, is_released
    FROM leases WHERE task_id = fenced_task FOR SHARE;
    IF NOT FOUND OR current_token <> fenced_token OR is_released THEN
        RAISE EXCEPTION 'lease % on task % is no longer current', fenced_token, fenced_task
            USING ERRCODE = 'RLOST';
    END IF;
    RETURN TRUE;
END $$;

-- A write that must change a row, as a statement that fails when it changed none: the
-- journal's writes call it, so they too can be sent unread, with the commit.
-- SQLSTATE RNONE; the driver raises the refusal the store gave with the write.
CREATE FUNCTION ratchet_expect_written(written BIGINT) RETURNS BOOLEAN
LANGUAGE plpgsql AS $$
BEGIN
    IF written = 0 THEN
        RAISE EXCEPTION 'the write changed no row' USING ERRCODE = 'RNONE';
    END IF;
    RETURN TRUE;
END $$;
