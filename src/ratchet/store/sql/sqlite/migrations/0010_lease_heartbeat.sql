-- When a worker's heartbeat last renewed each lease (NULL: not since it was
-- granted), so `ratchet serve` can show how long ago each worker was heard from.

ALTER TABLE leases ADD COLUMN renewed_at INTEGER;
ALTER TABLE lease_claims ADD COLUMN renewed_at INTEGER;
