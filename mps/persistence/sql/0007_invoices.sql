-- Invoices (decisions 8; mps.domain.invoices). Owned by their invoice's actor once created; the
-- company actor numbers and creates them.
CREATE TABLE invoices (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies (id),
    mode             TEXT NOT NULL,
    version          BIGINT NOT NULL,
    status           TEXT NOT NULL,
    invoice_number   TEXT NOT NULL,
    number_sequence  BIGINT,
    currency         TEXT NOT NULL,
    amount_minor     BIGINT NOT NULL,
    customer_email   TEXT NOT NULL,
    customer_name    TEXT,
    items            TEXT,
    due_date         TEXT,
    overdue_from     TEXT,
    memo             TEXT,
    paid_at          TEXT,
    paid_reference   TEXT,
    paid_note        TEXT,
    voided_at        TEXT,
    last_sent_at     TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
-- Numbers, the merchant's own and the automatic ones alike, are unique per company and mode.
CREATE UNIQUE INDEX invoices_by_number ON invoices (company_id, mode, invoice_number);
CREATE INDEX invoices_by_sequence ON invoices (company_id, mode, number_sequence);
CREATE INDEX invoices_by_company ON invoices (company_id, mode, created_at, id);
CREATE INDEX invoices_by_customer ON invoices (company_id, mode, customer_email, created_at);
-- The overdue scheduler's read: SENT invoices by the moment they become overdue.
CREATE INDEX invoices_overdue ON invoices (overdue_from) WHERE status = 'SENT';

-- Every change of an invoice, oldest first, with who made it.
CREATE TABLE invoice_timeline (
    id          TEXT PRIMARY KEY,
    invoice_id  TEXT NOT NULL REFERENCES invoices (id),
    company_id  TEXT NOT NULL,
    status      TEXT NOT NULL,
    at          TEXT NOT NULL,
    actor       TEXT NOT NULL,
    note        TEXT
);
CREATE INDEX invoice_timeline_by_invoice ON invoice_timeline (invoice_id, at, id);
