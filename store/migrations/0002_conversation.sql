-- The conversation: cancel requests, pull request outcomes, installations.
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN pr_outcome TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_repo_pr ON runs (repo, pr_number, id);

CREATE TABLE installations (
	id         INTEGER PRIMARY KEY,
	account    TEXT NOT NULL DEFAULT '',
	active     INTEGER NOT NULL,
	updated_at TEXT NOT NULL
);
