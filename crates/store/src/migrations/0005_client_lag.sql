-- schema version 5: the client's worst event-loop lateness per step.
ALTER TABLE steps ADD COLUMN client_lag_ms REAL;
