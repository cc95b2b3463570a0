-- schema version 8: open-loop steps. The offered rate, the service-time
-- histogram (from the actual send; latency_hdr counts from the intended
-- send), requests dropped at max_in_flight and requests sent late by the
-- client. NULL for closed-loop steps and steps written before.
ALTER TABLE steps ADD COLUMN offered_rate_per_s REAL;
ALTER TABLE steps ADD COLUMN service_hdr BLOB;
ALTER TABLE steps ADD COLUMN dropped INTEGER;
ALTER TABLE steps ADD COLUMN late_sends INTEGER;
