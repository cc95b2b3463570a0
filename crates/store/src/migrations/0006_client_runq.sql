-- schema version 6: the client's run-queue wait per step.
ALTER TABLE steps ADD COLUMN client_runq_wait_pct REAL;
