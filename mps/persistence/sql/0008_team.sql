-- Team (decisions 3, 9): custom roles and the audit trail.

-- A company's own roles; the built-in ones (mps.auth.scopes) are not stored. Owned by the
-- company actor, which refuses to delete one while a member holds it.
CREATE TABLE roles (
    id          TEXT PRIMARY KEY,
    company_id  TEXT NOT NULL REFERENCES companies (id),
    name        TEXT NOT NULL,
    scopes      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE UNIQUE INDEX roles_by_name ON roles (company_id, name);

-- The audit trail: one hash chain per company. `seq` counts a company's entries from 1 and
-- `prev_hash` is the hash of entry seq - 1, so an edited, removed or inserted row breaks the
-- chain where it happened. Appended only by the company actor, one unit at a time, in the
-- same unit as the change it records: the chain never forks.
CREATE TABLE audit_entries (
    id           TEXT PRIMARY KEY,
    company_id   TEXT NOT NULL REFERENCES companies (id),
    seq          BIGINT NOT NULL,
    at           TEXT NOT NULL,
    actor_type   TEXT NOT NULL,
    actor_id     TEXT,
    action       TEXT NOT NULL,
    target_type  TEXT,
    target_id    TEXT,
    details      TEXT NOT NULL,
    ip           TEXT,
    request_id   TEXT,
    prev_hash    TEXT,
    hash         TEXT NOT NULL
);
CREATE UNIQUE INDEX audit_by_seq ON audit_entries (company_id, seq);
CREATE INDEX audit_by_time ON audit_entries (company_id, at, id);
CREATE INDEX audit_by_actor ON audit_entries (company_id, actor_id, at, id);
CREATE INDEX audit_by_action ON audit_entries (company_id, action, at, id);
