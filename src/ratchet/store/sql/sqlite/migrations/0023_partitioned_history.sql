-- Nothing on SQLite: PostgreSQL keeps the journal and the events of ended tasks in partitions from
-- this version on (docs/stores.md, "Partitioned history"); a SQLite store keeps one table of each and
-- its retention deletes rows. The version is here so both dialects number their schemas alike.
SELECT 1;
