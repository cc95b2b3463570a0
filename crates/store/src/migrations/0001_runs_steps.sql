-- scalelab store, schema version 1: runs, their steps, per-second series.
CREATE TABLE scalelab_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY,
    kind             TEXT NOT NULL,
    label            TEXT NOT NULL,
    target           TEXT NOT NULL,
    workload         TEXT NOT NULL,
    started_unix_ms  INTEGER NOT NULL,
    finished_unix_ms INTEGER,
    complete         INTEGER NOT NULL DEFAULT 0,
    outcome          TEXT,
    plan_json        TEXT NOT NULL,
    environment_json TEXT NOT NULL
);
CREATE TABLE steps (
    run_id               INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx                  INTEGER NOT NULL,
    concurrency          INTEGER NOT NULL,
    window_s             REAL NOT NULL,
    window_start_unix_ms INTEGER,
    window_end_unix_ms   INTEGER,
    requests             INTEGER NOT NULL,
    queries              INTEGER NOT NULL,
    errors_json          TEXT NOT NULL,
    latency_hdr          BLOB,
    client_cpu_s         REAL,
    client_cores         INTEGER,
    reconnects           INTEGER,
    connect_ms           REAL,
    partial              INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE step_seconds (
    run_id      INTEGER NOT NULL,
    step_idx    INTEGER NOT NULL,
    second      INTEGER NOT NULL,
    requests    INTEGER NOT NULL,
    errors      INTEGER NOT NULL,
    latency_hdr BLOB,
    PRIMARY KEY (run_id, step_idx, second),
    FOREIGN KEY (run_id, step_idx) REFERENCES steps(run_id, idx) ON DELETE CASCADE
);
