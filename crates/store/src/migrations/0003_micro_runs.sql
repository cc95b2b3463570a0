-- schema version 3: OS micro-benchmark runs keep their whole report (results
-- with median, spread and unit, warnings) as one JSON document.
CREATE TABLE micro_reports (
    run_id      INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    report_json TEXT NOT NULL
);
