-- schema version 4: raw telemetry samples (system, process, thread states),
-- one JSON document each, and the probes that were unavailable and why.
CREATE TABLE samples (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    unix_ms INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    json    TEXT NOT NULL
);
CREATE INDEX samples_run ON samples(run_id, kind, unix_ms);
CREATE TABLE probe_notes (
    run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source  TEXT NOT NULL,
    reason  TEXT NOT NULL,
    PRIMARY KEY (run_id, source)
);
