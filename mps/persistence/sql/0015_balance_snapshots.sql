-- The balances of each company, mode and currency, kept beside the postings they sum
-- (decisions 5; mps.domain.ledger), so that a company actor's activation reads a few rows
-- instead of summing every posting the company ever had.
--
-- Not a second, independent record of the money: a row changes only in the unit that writes the
-- postings it sums (mps.persistence.ledger_store.movement_statements adds each unit's change
-- with one upsert), so it commits with them or not at all, and the reconciliation compares every
-- row with the sum of its postings (a difference is reported like any other mismatch). The
-- postings stay the truth; this table can always be rebuilt from them (the INSERT below).
--
--   available, pending, reserved   the sums of the merchant's accounts' postings
--   unsettled                      the credits still waiting for settlement: the sum of the
--                                  company's `settlements` rows not settled yet
CREATE TABLE balance_snapshots (
    company_id  TEXT NOT NULL REFERENCES companies (id),
    mode        TEXT NOT NULL,
    currency    TEXT NOT NULL,
    available   BIGINT NOT NULL DEFAULT 0,
    pending     BIGINT NOT NULL DEFAULT 0,
    reserved    BIGINT NOT NULL DEFAULT 0,
    unsettled   BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (company_id, mode, currency)
);

-- The balances of the postings written before this table: summed once, here.
INSERT INTO balance_snapshots (company_id, mode, currency, available, pending, reserved, unsettled)
SELECT company_id, mode, currency, SUM(available), SUM(pending), SUM(reserved), SUM(unsettled)
FROM (
    SELECT company_id, mode, currency,
           CASE WHEN account = 'available' THEN amount_minor ELSE 0 END AS available,
           CASE WHEN account = 'pending' THEN amount_minor ELSE 0 END AS pending,
           CASE WHEN account = 'reserved' THEN amount_minor ELSE 0 END AS reserved,
           0 AS unsettled
    FROM ledger_postings WHERE account IN ('available', 'pending', 'reserved')
    UNION ALL
    SELECT company_id, mode, currency, 0, 0, 0, amount_minor
    FROM settlements WHERE settled_at IS NULL
) AS summed
GROUP BY company_id, mode, currency;
