-- Webhook retention (docs/webhooks.md): the delivery workers delete settled deliveries whose last activity (the
-- last attempt, or the redelivery or creation it counts its age from) is older than ARBITER_WEBHOOK_RETENTION_HOURS,
-- then the events left without deliveries, a bounded batch at a time. Pending deliveries are never deleted.

-- The settled deliveries in the order they fall out of the retention.
CREATE INDEX webhook_deliveries_settled_idx ON webhook_deliveries ((greatest(retry_from, last_attempt_at)))
  WHERE status <> 'pending';
-- Whether an event still has deliveries; also what deleting an event checks its foreign key against.
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);
-- The events old enough to go once their deliveries have.
CREATE INDEX webhook_events_created_idx ON webhook_events (created_at);
