-- Which process holds each lease, beyond its host name and pid: the PID space
-- the pid counts in (the machine's boot and its PID namespace) and when the
-- process started, so that a worker of the same host can tell a holder that
-- died from one in another container, or from a later process given its pid.

ALTER TABLE leases ADD COLUMN pid_space TEXT NOT NULL DEFAULT '';
ALTER TABLE leases ADD COLUMN pid_started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE lease_claims ADD COLUMN pid_space TEXT NOT NULL DEFAULT '';
ALTER TABLE lease_claims ADD COLUMN pid_started INTEGER NOT NULL DEFAULT 0;
