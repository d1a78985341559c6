-- Cards (decisions 6): virtual cards prepaid from the merchant's available balance. The number
-- and the CVC are sealed with the encryption key; only the last four digits are kept in the
-- clear, and a keyed hash of the number keeps numbers unique. A card's balance is the sum of the ledger postings on its account (mps.domain.ledger:
-- `card` postings of the movements whose source is the card), stored nowhere else.
CREATE TABLE cards (
    id               TEXT PRIMARY KEY,
    company_id       TEXT NOT NULL REFERENCES companies (id),
    mode             TEXT NOT NULL,
    version          BIGINT NOT NULL,
    type             TEXT NOT NULL,
    cardholder_name  TEXT,
    nickname         TEXT,
    member_id        TEXT,
    brand            TEXT NOT NULL,
    last4            TEXT NOT NULL,
    number           TEXT NOT NULL,
    number_hash      TEXT NOT NULL UNIQUE,
    cvc              TEXT NOT NULL,
    exp_month        INTEGER NOT NULL,
    exp_year         INTEGER NOT NULL,
    currency         TEXT NOT NULL,
    status           TEXT NOT NULL,
    controls         TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX cards_by_company ON cards (company_id, mode, created_at, id);

-- Authorizations of a card, approved or declined, with the reason of a decline. An approved one
-- debited the card in the same unit (a `card_spend` movement).
CREATE TABLE card_authorizations (
    id             TEXT PRIMARY KEY,
    card_id        TEXT NOT NULL REFERENCES cards (id),
    company_id     TEXT NOT NULL,
    mode           TEXT NOT NULL,
    amount_minor   BIGINT NOT NULL,
    currency       TEXT NOT NULL,
    approved       INTEGER NOT NULL,
    decline_reason TEXT,
    merchant_name  TEXT,
    category       TEXT,
    created_at     TEXT NOT NULL
);
CREATE INDEX card_authorizations_by_card ON card_authorizations (card_id, created_at, id);
