-- schema version 10: open-loop steps keep their service time (from the
-- actual send) per second of the window too, an HDR histogram like the
-- second's latency_hdr (which counts from the intended send). NULL for
-- closed-loop steps and steps written before.
ALTER TABLE step_seconds ADD COLUMN service_hdr BLOB;
