-- Housekeeping deletes rows past their retention in bounded batches (mps.persistence.retention);
-- each batch looks its rows up by the retention column, so that column needs an index.
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
CREATE INDEX logins_by_creation ON logins (created_at);
CREATE INDEX events_by_creation ON events (created_at);
CREATE INDEX api_key_logs_by_time ON api_key_logs (at);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE INDEX sessions_by_revocation ON sessions (revoked_at);
