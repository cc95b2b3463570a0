-- schema version 2: imported series carry published throughput (they have no
-- window or histogram), and remember the file they came from.
ALTER TABLE steps ADD COLUMN published_throughput_per_s REAL;
ALTER TABLE runs ADD COLUMN source TEXT;
CREATE INDEX runs_label ON runs(label);
