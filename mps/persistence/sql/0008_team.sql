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

-- Invitations to join a company. The token travels only in the emailed link; what is stored is
-- its keyed hash. Changes are guarded by the status they expect, so an accept and a revoke
-- racing each other have one winner.
CREATE TABLE invitations (
    id           TEXT PRIMARY KEY,
    company_id   TEXT NOT NULL REFERENCES companies (id),
    email        TEXT NOT NULL,
    role_id      TEXT NOT NULL,
    status       TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    invited_by   TEXT NOT NULL,
    user_id      TEXT,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    decided_at   TEXT
);
CREATE INDEX invitations_by_company ON invitations (company_id, created_at, id);

-- Maker-checker approvals: a policy per action (amount thresholds per currency, approvals
-- required), and the requests made when an action is above its threshold. A request's votes
-- are rows of their own, one per member (the key refuses a second). The action of an APPROVED
-- request commits in the same unit as the request becoming EXECUTED, guarded by that status,
-- so it runs exactly once however often it is tried.
CREATE TABLE approval_policies (
    company_id          TEXT NOT NULL REFERENCES companies (id),
    action              TEXT NOT NULL,
    enabled             INTEGER NOT NULL,
    thresholds          TEXT NOT NULL,
    required_approvals  INTEGER NOT NULL,
    updated_at          TEXT NOT NULL,
    PRIMARY KEY (company_id, action)
);

CREATE TABLE approval_requests (
    id                  TEXT PRIMARY KEY,
    company_id          TEXT NOT NULL REFERENCES companies (id),
    mode                TEXT NOT NULL,
    action              TEXT NOT NULL,
    status              TEXT NOT NULL,
    requested_by        TEXT NOT NULL,
    payload             TEXT NOT NULL,
    required_approvals  INTEGER NOT NULL,
    result              TEXT,
    error               TEXT,
    created_at          TEXT NOT NULL,
    expires_at          TEXT NOT NULL,
    decided_at          TEXT
);
CREATE INDEX approval_requests_by_company ON approval_requests (company_id, mode, created_at, id);
CREATE INDEX approval_requests_open ON approval_requests (expires_at)
    WHERE status IN ('PENDING', 'APPROVED');

CREATE TABLE approval_votes (
    request_id  TEXT NOT NULL REFERENCES approval_requests (id),
    user_id     TEXT NOT NULL,
    decision    TEXT NOT NULL,
    comment     TEXT,
    at          TEXT NOT NULL,
    PRIMARY KEY (request_id, user_id)
);
