-- Analytics (decisions 13): per-day rollups of the payments, kept in the same unit as each change
-- they count, so they never drift from the rows (a reconciliation check compares them). A route
-- reads at most a few hundred of these rows, however many payments a company has.
--
-- One row per company, mode, currency and UTC day. The day of a figure is the day of its event:
--   created_*   payments created that day (multi-use links are not payments: their paid
--               children are)
--   paid_*      payments paid that day (gross: refunds do not reduce them)
--   failed_*    declined checkouts that day, in the payment's currency
--   status_*    the payments created that day, by their current status
CREATE TABLE analytics_days (
    company_id             TEXT NOT NULL REFERENCES companies (id),
    mode                   TEXT NOT NULL,
    currency               TEXT NOT NULL,
    day                    TEXT NOT NULL,
    created_count          BIGINT NOT NULL DEFAULT 0,
    created_minor          BIGINT NOT NULL DEFAULT 0,
    paid_count             BIGINT NOT NULL DEFAULT 0,
    paid_minor             BIGINT NOT NULL DEFAULT 0,
    failed_count           BIGINT NOT NULL DEFAULT 0,
    failed_minor           BIGINT NOT NULL DEFAULT 0,
    status_pending         BIGINT NOT NULL DEFAULT 0,
    status_paid            BIGINT NOT NULL DEFAULT 0,
    status_expired         BIGINT NOT NULL DEFAULT 0,
    status_cancelled       BIGINT NOT NULL DEFAULT 0,
    status_refunded        BIGINT NOT NULL DEFAULT 0,
    status_partial_refund  BIGINT NOT NULL DEFAULT 0,
    status_reversed        BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (company_id, mode, day, currency)
);

-- Every declined checkout, the raw rows behind `failed_*` (a payment keeps only its recent
-- declines, for the card-testing guard). The id is the payment's transition that declined.
CREATE TABLE payment_declines (
    id            TEXT PRIMARY KEY,
    payment_id    TEXT NOT NULL,
    company_id    TEXT NOT NULL REFERENCES companies (id),
    mode          TEXT NOT NULL,
    currency      TEXT NOT NULL,
    amount_minor  BIGINT NOT NULL,
    declined_at   TEXT NOT NULL
);
CREATE INDEX payment_declines_by_company ON payment_declines (company_id, mode, declined_at);

-- Payments that existed before the rollups: counted once, here.
INSERT INTO analytics_days (
    company_id, mode, currency, day, created_count, created_minor, paid_count, paid_minor,
    status_pending, status_paid, status_expired, status_cancelled, status_refunded,
    status_partial_refund, status_reversed
)
SELECT company_id, mode, currency, day, SUM(created_count), SUM(created_minor), SUM(paid_count),
       SUM(paid_minor), SUM(status_pending), SUM(status_paid), SUM(status_expired),
       SUM(status_cancelled), SUM(status_refunded), SUM(status_partial_refund),
       SUM(status_reversed)
FROM (
    SELECT company_id, mode, currency, substr(created_at, 1, 10) AS day,
           1 AS created_count, amount_minor AS created_minor, 0 AS paid_count, 0 AS paid_minor,
           CASE WHEN status = 'PENDING' THEN 1 ELSE 0 END AS status_pending,
           CASE WHEN status = 'PAID' THEN 1 ELSE 0 END AS status_paid,
           CASE WHEN status = 'EXPIRED' THEN 1 ELSE 0 END AS status_expired,
           CASE WHEN status = 'CANCELLED' THEN 1 ELSE 0 END AS status_cancelled,
           CASE WHEN status = 'REFUNDED' THEN 1 ELSE 0 END AS status_refunded,
           CASE WHEN status = 'PARTIAL_REFUND' THEN 1 ELSE 0 END AS status_partial_refund,
           CASE WHEN status = 'REVERSED' THEN 1 ELSE 0 END AS status_reversed
    FROM payments WHERE allow_multiple = 0
    UNION ALL
    SELECT company_id, mode, currency, substr(paid_at, 1, 10) AS day, 0, 0, 1, amount_minor,
           0, 0, 0, 0, 0, 0, 0
    FROM payments WHERE paid_at IS NOT NULL
) AS counted
GROUP BY company_id, mode, currency, day;
