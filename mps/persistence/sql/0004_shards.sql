-- Cluster mode (mps.cluster). A node that becomes the owner of a shard bumps its epoch here, and
-- every group commit checks the epoch of each shard it writes for under a shared row lock, so a
-- former owner that wakes up late cannot commit: its epoch is no longer the current one.
CREATE TABLE shard_epochs (
    shard       INTEGER PRIMARY KEY,
    epoch       BIGINT NOT NULL,
    node        TEXT NOT NULL,
    taken_at    TEXT NOT NULL
);

-- The shard a company belongs to, so that periodic work (expiry, and the schedulers to come) can
-- select only the rows of the shards this node owns. Set when the company is created; companies
-- created before this column existed are filled in at start (mps.persistence.shard_store).
ALTER TABLE companies ADD COLUMN shard INTEGER;
CREATE INDEX companies_by_shard ON companies (shard, id);
