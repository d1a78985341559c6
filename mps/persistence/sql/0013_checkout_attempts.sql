-- Checkout attempts: one row per card authorization asked of the processor, committed IN_FLIGHT
-- in a unit of its own before the call, and settled (APPROVED, DECLINED, VOID) by the guarded
-- update in the unit that books the answer, so an answer is booked at most once. The id is the
-- processor's idempotency key. `retry_key` names "the same attempt" for a shopper's retry (a keyed
-- hash of the checkout's Idempotency-Key, or of the card for a single-use payment); it is
-- cleared when the attempt ends without a charge, so that a retry is then a new attempt.
-- `payment_id` is the payment, or the multi-use link whose child `child_id` the attempt pays.
CREATE TABLE checkout_attempts (
    id           TEXT PRIMARY KEY,
    company_id   TEXT NOT NULL REFERENCES companies (id),
    payment_id   TEXT NOT NULL,
    retry_key    TEXT,
    child_id     TEXT,
    email        TEXT,
    phone        TEXT,
    status       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (payment_id, retry_key)
);
CREATE INDEX checkout_attempts_unsettled ON checkout_attempts (status, created_at);
