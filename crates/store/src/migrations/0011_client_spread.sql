-- schema version 11: how a step's completions spread over its clients
-- (served nothing, fewest, most, sums for Jain's index) and the requests
-- still out at the window's end, as the JSON of core's ClientSpread.
-- NULL for steps written before and for imported series.
ALTER TABLE steps ADD COLUMN clients_json TEXT;
