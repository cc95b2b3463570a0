-- schema version 9: the connect time of each connection opened inside a
-- step's window (no keep-alive, reconnects), an HDR histogram like
-- latency_hdr; NULL when none was opened.
ALTER TABLE steps ADD COLUMN connect_hdr BLOB;
