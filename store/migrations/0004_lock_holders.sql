-- A run job recorded before its trigger could be checked (a custom label, a
-- comment by someone who may lack write access) does not hold the issue's
-- run lock at intake; it is checked when it runs.
ALTER TABLE jobs ADD COLUMN holds_lock INTEGER NOT NULL DEFAULT 1;
