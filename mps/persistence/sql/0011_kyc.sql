-- Identity verification (decisions 12). A document's file lives in object storage under
-- `storage_key` (mps.storage), never in the database and never on a served path, encrypted under
-- its own data key, kept here sealed with the service's encryption key (mps.storage.sealed);
-- the row keeps what the content was judged to be, its size and its sha256 (of the plaintext).
-- The company's status per mode is part of its settings (kycStatus); each review that set it
-- is kept here.
CREATE TABLE kyc_documents (
    id            TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies (id),
    mode          TEXT NOT NULL,
    type          TEXT NOT NULL,
    status        TEXT NOT NULL,
    file_name     TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    BIGINT NOT NULL,
    sha256        TEXT NOT NULL,
    storage_key   TEXT NOT NULL UNIQUE,
    sealed_key    TEXT NOT NULL,
    uploaded_by   TEXT,
    created_at    TEXT NOT NULL,
    reviewed_at   TEXT
);
CREATE INDEX kyc_documents_by_company ON kyc_documents (company_id, mode, created_at, id);

CREATE TABLE kyc_reviews (
    id           TEXT PRIMARY KEY,
    company_id   TEXT NOT NULL REFERENCES companies (id),
    mode         TEXT NOT NULL,
    status       TEXT NOT NULL,
    reason       TEXT,
    reviewed_by  TEXT NOT NULL,
    reviewed_at  TEXT NOT NULL
);
CREATE INDEX kyc_reviews_by_company ON kyc_reviews (company_id, mode, reviewed_at);

-- Requests an operator makes from the command line (`run.py kyc review`), carried out by the
-- node that owns the company's shard, which marks them done with what came of them.
CREATE TABLE operator_requests (
    id            TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies (id),
    kind          TEXT NOT NULL,
    payload       TEXT NOT NULL,
    requested_by  TEXT NOT NULL,
    requested_at  TEXT NOT NULL,
    done_at       TEXT,
    outcome       TEXT
);
CREATE INDEX operator_requests_open ON operator_requests (done_at, requested_at);
