-- schema version 12: HTTP/2 flow control, per step: the window's requests
-- that waited for the server's send window before they were all sent, and
-- their wait in all (ms). NULL for protocols without flow control of their
-- own, steps written before and imported series.
ALTER TABLE steps ADD COLUMN flow_stalls INTEGER;
ALTER TABLE steps ADD COLUMN flow_stall_ms REAL;
