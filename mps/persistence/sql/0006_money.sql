-- Money movement (decisions 5; mps.domain.ledger): the ledger, settlements, refunds, bank
-- accounts and payouts.

-- One balanced transaction per movement, and its postings. Only the company actor writes them,
-- in the same unit as the change that moved the money. Balances are sums of postings and are
-- stored nowhere else.
CREATE TABLE ledger_transactions (
    id          TEXT PRIMARY KEY,
    company_id  TEXT NOT NULL REFERENCES companies (id),
    mode        TEXT NOT NULL,
    currency    TEXT NOT NULL,
    type        TEXT NOT NULL,
    source_id   TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
CREATE INDEX ledger_transactions_by_company
    ON ledger_transactions (company_id, mode, created_at, id);
CREATE INDEX ledger_transactions_by_source ON ledger_transactions (source_id, type);
-- The ledger probe of /health checks the newest transactions.
CREATE INDEX ledger_transactions_recent ON ledger_transactions (created_at);

CREATE TABLE ledger_postings (
    transaction_id  TEXT NOT NULL REFERENCES ledger_transactions (id),
    company_id      TEXT NOT NULL,
    mode            TEXT NOT NULL,
    currency        TEXT NOT NULL,
    account         TEXT NOT NULL,
    amount_minor    BIGINT NOT NULL,
    PRIMARY KEY (transaction_id, account)
);
-- A company actor's activation sums each account straight off this index.
CREATE INDEX ledger_postings_by_account
    ON ledger_postings (company_id, mode, currency, account, amount_minor);

-- A PAID payment's credit waits here until `due_at`, when the settlement scheduler moves it
-- from pending to available. Found in storage, so a restart loses nothing that was due.
CREATE TABLE settlements (
    payment_id    TEXT PRIMARY KEY,
    company_id    TEXT NOT NULL REFERENCES companies (id),
    mode          TEXT NOT NULL,
    currency      TEXT NOT NULL,
    amount_minor  BIGINT NOT NULL,
    due_at        TEXT NOT NULL,
    settled_at    TEXT
);
CREATE INDEX settlements_due ON settlements (due_at) WHERE settled_at IS NULL;
CREATE INDEX settlements_open ON settlements (company_id, mode, currency) WHERE settled_at IS NULL;

-- Refunds, owned by their payment's actor. `from_pending_minor` is the part of the reservation
-- taken from pending, returned there if the refund is rejected. `process_after`: when the
-- processor is asked for the outcome (mps.actors.money).
CREATE TABLE refunds (
    id                  TEXT PRIMARY KEY,
    company_id          TEXT NOT NULL REFERENCES companies (id),
    mode                TEXT NOT NULL,
    payment_id          TEXT NOT NULL REFERENCES payments (id),
    version             BIGINT NOT NULL,
    status              TEXT NOT NULL,
    amount_minor        BIGINT NOT NULL,
    currency            TEXT NOT NULL,
    reason              TEXT,
    failure_reason      TEXT,
    from_pending_minor  BIGINT NOT NULL,
    process_after       TEXT NOT NULL,
    completed_at        TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL
);
CREATE INDEX refunds_by_company ON refunds (company_id, mode, created_at, id);
CREATE INDEX refunds_by_payment ON refunds (payment_id, status);
CREATE INDEX refunds_due ON refunds (process_after) WHERE status = 'PENDING';

-- Bank accounts payouts go to. The account number is sealed with the encryption key; only its
-- last four digits are kept in the clear. A deleted account keeps its row for the payouts that
-- name it.
CREATE TABLE bank_accounts (
    id                   TEXT PRIMARY KEY,
    company_id           TEXT NOT NULL REFERENCES companies (id),
    mode                 TEXT NOT NULL,
    account_holder_name  TEXT NOT NULL,
    account_number       TEXT NOT NULL,
    last4                TEXT NOT NULL,
    bank_code            TEXT NOT NULL,
    currency             TEXT NOT NULL,
    country              TEXT NOT NULL,
    status               TEXT NOT NULL,
    created_at           TEXT NOT NULL,
    deleted_at           TEXT
);
CREATE INDEX bank_accounts_by_company ON bank_accounts (company_id, mode, created_at, id);

-- Payouts, owned by the company actor. `next_step_at`: when the payout processor takes the next
-- step of an open payout (PENDING -> IN_TRANSIT, IN_TRANSIT -> PAID).
CREATE TABLE payouts (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies (id),
    mode             TEXT NOT NULL,
    version          BIGINT NOT NULL,
    status           TEXT NOT NULL,
    amount_minor     BIGINT NOT NULL,
    currency         TEXT NOT NULL,
    bank_account_id  TEXT NOT NULL REFERENCES bank_accounts (id),
    description      TEXT,
    failure_reason   TEXT,
    automatic        INTEGER NOT NULL,
    arrival_at       TEXT,
    next_step_at     TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX payouts_by_company ON payouts (company_id, mode, created_at, id);
CREATE INDEX payouts_due ON payouts (next_step_at) WHERE status IN ('PENDING', 'IN_TRANSIT');

-- Automatic payouts (the `payoutSchedule` setting, daily or weekly): when each company's next
-- one is due, written with the settings change and moved on by the run it triggers.
CREATE TABLE payout_schedules (
    company_id   TEXT NOT NULL REFERENCES companies (id),
    mode         TEXT NOT NULL,
    schedule     TEXT NOT NULL,
    next_run_at  TEXT NOT NULL,
    PRIMARY KEY (company_id, mode)
);
CREATE INDEX payout_schedules_due ON payout_schedules (next_run_at);
