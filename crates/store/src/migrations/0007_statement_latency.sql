-- schema version 8 (numbered 0008: 0007 is taken by another change):
-- per-statement latency inside transaction units (SQL), one JSON array per
-- step of {name, count, mean_ms, p50_ms, p99_ms}; NULL when not measured.
ALTER TABLE steps ADD COLUMN statements_json TEXT;
