-- What each attempt's sandbox cost, in microdollars, and whether that is an
-- estimate (CPU and memory at Runtime's prices) rather than Runtime's charge.
ALTER TABLE attempts ADD COLUMN cost_micros INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN cost_estimated INTEGER NOT NULL DEFAULT 0;
