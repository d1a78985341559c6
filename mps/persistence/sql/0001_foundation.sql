-- Companies and their per-mode settings; the company actor owns the row (optimistic version).
CREATE TABLE companies (
    id          TEXT PRIMARY KEY,
    version     BIGINT NOT NULL,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    data        TEXT NOT NULL
);

CREATE TABLE users (
    id          TEXT PRIMARY KEY,
    email       TEXT NOT NULL UNIQUE,
    name        TEXT,
    created_at  TEXT NOT NULL
);

CREATE TABLE members (
    company_id  TEXT NOT NULL REFERENCES companies (id),
    user_id     TEXT NOT NULL REFERENCES users (id),
    role_id     TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (company_id, user_id)
);
CREATE INDEX members_by_user ON members (user_id);

-- A sign-in attempt: one-time codes are stored only as a keyed hash.
CREATE TABLE logins (
    id               TEXT PRIMARY KEY,
    email            TEXT NOT NULL,
    user_id          TEXT,
    company_id       TEXT,
    code_hash        TEXT,
    code_expires_at  TEXT,
    failed_attempts  INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL,
    consumed_at      TEXT
);

CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    company_id  TEXT NOT NULL,
    mode        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX sessions_by_member ON sessions (company_id, user_id);

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies (id),
    mode          TEXT NOT NULL,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    prefix        TEXT NOT NULL,
    last4         TEXT NOT NULL,
    secret_hash   TEXT NOT NULL UNIQUE,
    scopes        TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    last_used_at  TEXT,
    revoked_at    TEXT
);
CREATE INDEX api_keys_by_company ON api_keys (company_id, created_at, id);

CREATE TABLE api_key_logs (
    id           TEXT PRIMARY KEY,
    key_id       TEXT NOT NULL,
    company_id   TEXT NOT NULL,
    at           TEXT NOT NULL,
    method       TEXT NOT NULL,
    path         TEXT NOT NULL,
    status_code  INTEGER NOT NULL,
    ip           TEXT,
    request_id   TEXT NOT NULL
);
CREATE INDEX api_key_logs_by_key ON api_key_logs (key_id, at, id);

-- A request's Idempotency-Key with the response it produced, committed with what it created.
CREATE TABLE idempotency_keys (
    company_id   TEXT NOT NULL,
    idem_key     TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status_code  INTEGER NOT NULL,
    headers      TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    PRIMARY KEY (company_id, idem_key)
);

-- The outbox: every event is written in the transaction of the change it reports.
CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    company_id     TEXT NOT NULL,
    mode           TEXT NOT NULL,
    type           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    data           TEXT NOT NULL,
    dispatched_at  TEXT
);
CREATE INDEX events_by_company ON events (company_id, mode, created_at, id);
CREATE INDEX events_undispatched ON events (dispatched_at, created_at);
