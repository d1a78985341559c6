-- The outbox's oldest undispatched event is read from events_outbox (created_at, id) WHERE
-- dispatched_at IS NULL, which holds only what is still to publish. events_undispatched indexed
-- every event ever written and cost each insert and each update of an event one more entry.
DROP INDEX events_undispatched;
