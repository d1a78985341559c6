-- Events and webhooks (decisions 10; mps.webhooks).

-- Every event carries `sequence`: one more than the company's previous event in that mode, in
-- commit order, so a receiver can tell from the events alone whether it missed one. Numbered by
-- the commit that inserts the event (mps.persistence.outbox.numbering); the counter is a row of
-- its own because retention deletes old events, so MAX(sequence) + 1 would count again.
CREATE TABLE event_sequences (
    company_id  TEXT NOT NULL,
    mode        TEXT NOT NULL,
    last        BIGINT NOT NULL,
    PRIMARY KEY (company_id, mode)
);
ALTER TABLE events ADD COLUMN sequence BIGINT;
CREATE INDEX events_unnumbered ON events (company_id, mode) WHERE sequence IS NULL;
CREATE UNIQUE INDEX events_by_sequence ON events (company_id, mode, sequence);
CREATE INDEX events_by_type ON events (company_id, mode, type, created_at, id);
-- The outbox relay's read: the oldest undispatched events, in order, straight off the index.
CREATE INDEX events_outbox ON events (created_at, id) WHERE dispatched_at IS NULL;

-- Events written before this migration get their numbers now, oldest first.
INSERT INTO event_sequences (company_id, mode, last)
SELECT company_id, mode, COUNT(*) FROM events WHERE sequence IS NULL GROUP BY company_id, mode
ON CONFLICT (company_id, mode) DO UPDATE SET last = event_sequences.last + excluded.last;
UPDATE events SET sequence = fresh.seq
FROM (
    SELECT e.id AS id,
           s.last - COUNT(*) OVER (PARTITION BY e.company_id, e.mode)
             + ROW_NUMBER() OVER (PARTITION BY e.company_id, e.mode ORDER BY e.created_at, e.id)
             AS seq
    FROM events e
    JOIN event_sequences s ON s.company_id = e.company_id AND s.mode = e.mode
    WHERE e.sequence IS NULL
) AS fresh
WHERE events.id = fresh.id;

-- A company's webhook endpoints, per mode. The signing secrets are sealed with the encryption
-- key (they must be used, so they cannot be hashed); the previous one keeps signing until
-- `previous_secret_expires_at` after a rotation.
CREATE TABLE webhook_endpoints (
    id                          TEXT PRIMARY KEY,
    company_id                  TEXT NOT NULL,
    mode                        TEXT NOT NULL,
    url                         TEXT NOT NULL,
    description                 TEXT,
    events                      TEXT NOT NULL,
    secret                      TEXT NOT NULL,
    previous_secret             TEXT,
    previous_secret_expires_at  TEXT,
    status                      TEXT NOT NULL,
    disabled_reason             TEXT,
    -- When its deliveries began to fail without a success since (NULL while they succeed):
    -- five days of that disable it.
    failing_since               TEXT,
    created_at                  TEXT NOT NULL,
    updated_at                  TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_by_company ON webhook_endpoints (company_id, mode, created_at, id);

-- The default signing secret of a company and mode: it signs what goes to a payment's own
-- webhookUrl. Made on first use.
CREATE TABLE webhook_default_secrets (
    company_id  TEXT NOT NULL,
    mode        TEXT NOT NULL,
    secret      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (company_id, mode)
);

-- One delivery of one event to one target: an endpoint, or (`endpoint_id` NULL, target
-- 'payment') a payment's own webhookUrl. `origin` tells the first fan-out of the event
-- ('event') from a replay of it ('replay:<id>'), so a redelivered fan-out message makes no
-- second delivery while a replay makes a new one.
CREATE TABLE webhook_deliveries (
    id                TEXT PRIMARY KEY,
    company_id        TEXT NOT NULL,
    mode              TEXT NOT NULL,
    event_id          TEXT NOT NULL,
    event_type        TEXT NOT NULL,
    endpoint_id       TEXT,
    target            TEXT NOT NULL,
    origin            TEXT NOT NULL,
    url               TEXT NOT NULL,
    status            TEXT NOT NULL,
    attempts          INTEGER NOT NULL,
    next_attempt_at   TEXT,
    last_attempt_at   TEXT,
    last_status_code  INTEGER,
    last_error        TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (event_id, target, origin);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries (company_id, event_id);
CREATE INDEX webhook_deliveries_open ON webhook_deliveries (status, next_attempt_at);

-- Every attempt of a delivery, as the receiver answered it.
CREATE TABLE webhook_attempts (
    delivery_id   TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    at            TEXT NOT NULL,
    status_code   INTEGER,
    error         TEXT,
    duration_ms   INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);
