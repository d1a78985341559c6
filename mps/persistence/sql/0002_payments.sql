-- Payments: one row per payment, owned by its payment actor (optimistic version).
CREATE TABLE payments (
    id                     TEXT PRIMARY KEY,
    company_id             TEXT NOT NULL REFERENCES companies (id),
    mode                   TEXT NOT NULL,
    version                BIGINT NOT NULL,
    reference              TEXT NOT NULL UNIQUE,
    status                 TEXT NOT NULL,
    amount_minor           BIGINT NOT NULL,
    amount_refunded_minor  BIGINT NOT NULL DEFAULT 0,
    currency               TEXT NOT NULL,
    description            TEXT,
    customer_email         TEXT,
    customer_phone         TEXT,
    customer_id            TEXT,
    expires_at             TEXT,
    allow_multiple         INTEGER NOT NULL,
    success_url            TEXT,
    cancel_url             TEXT,
    webhook_url            TEXT,
    metadata               TEXT NOT NULL,
    link_payment_id        TEXT,
    card_brand             TEXT,
    card_last4             TEXT,
    declines               TEXT NOT NULL,
    paid_at                TEXT,
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL
);
CREATE INDEX payments_by_company ON payments (company_id, mode, created_at, id);
CREATE INDEX payments_by_status ON payments (company_id, mode, status, created_at);
CREATE INDEX payments_by_link ON payments (link_payment_id, created_at);
CREATE INDEX payments_by_customer ON payments (customer_id, created_at);
CREATE INDEX payments_expiring ON payments (status, expires_at);

-- Customers, derived from payment activity; totals are computed from payments, never stored.
-- The id is a keyed hash of (company, mode, email or phone), so every writer that meets the same
-- customer names the same row; `origin` is the payment transition that created it.
CREATE TABLE customers (
    id             TEXT PRIMARY KEY,
    origin         TEXT NOT NULL,
    company_id     TEXT NOT NULL REFERENCES companies (id),
    mode           TEXT NOT NULL,
    email          TEXT,
    phone          TEXT,
    first_seen_at  TEXT NOT NULL,
    last_seen_at   TEXT NOT NULL,
    created_at     TEXT NOT NULL
);
CREATE INDEX customers_by_email ON customers (company_id, mode, email);
CREATE INDEX customers_by_company ON customers (company_id, mode, created_at, id);
