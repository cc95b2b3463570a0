-- schema version 13: `--busy-poll`, per step: the client CPU (s) spent in
-- polls that found nothing to do, part of client_cpu_s. NULL for a client
-- that slept while it waited, steps written before and imported series.
ALTER TABLE steps ADD COLUMN client_poll_idle_s REAL;
