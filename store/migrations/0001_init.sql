-- Times are UTC text in the fixed-width form 2006-01-02T15:04:05.000000000Z,
-- so they sort as text; durations are integer nanoseconds.

CREATE TABLE deliveries (
	id              TEXT PRIMARY KEY,
	event           TEXT NOT NULL,
	action          TEXT NOT NULL DEFAULT '',
	repo            TEXT NOT NULL DEFAULT '',
	installation_id INTEGER NOT NULL DEFAULT 0,
	received_at     TEXT NOT NULL
);

CREATE TABLE jobs (
	id              INTEGER PRIMARY KEY AUTOINCREMENT,
	delivery_id     TEXT NOT NULL REFERENCES deliveries (id),
	kind            TEXT NOT NULL,
	installation_id INTEGER NOT NULL DEFAULT 0,
	repo            TEXT NOT NULL DEFAULT '',
	issue           INTEGER NOT NULL DEFAULT 0,
	payload         BLOB,
	status          TEXT NOT NULL,
	error           TEXT NOT NULL DEFAULT '',
	tries           INTEGER NOT NULL DEFAULT 0,
	created_at      TEXT NOT NULL,
	updated_at      TEXT NOT NULL
);

CREATE UNIQUE INDEX jobs_delivery ON jobs (delivery_id);
CREATE INDEX jobs_status ON jobs (status, id);
CREATE INDEX jobs_repo_issue ON jobs (repo, issue, id);
-- At most one running "run" job per issue: the store-held lock of the design.
CREATE UNIQUE INDEX jobs_one_running_run ON jobs (repo, issue)
	WHERE status = 'running' AND kind = 'run';

CREATE TABLE runs (
	id                INTEGER PRIMARY KEY AUTOINCREMENT,
	job_id            INTEGER REFERENCES jobs (id),
	repo              TEXT NOT NULL,
	issue             INTEGER NOT NULL,
	status            TEXT NOT NULL,
	base_commit       TEXT NOT NULL DEFAULT '',
	status_comment_id INTEGER NOT NULL DEFAULT 0,
	pr_number         INTEGER NOT NULL DEFAULT 0,
	pr_url            TEXT NOT NULL DEFAULT '',
	winner            INTEGER NOT NULL DEFAULT 0,
	config            BLOB,
	error             TEXT NOT NULL DEFAULT '',
	started_at        TEXT NOT NULL,
	finished_at       TEXT
);

CREATE INDEX runs_repo_issue ON runs (repo, issue, id);
CREATE INDEX runs_job ON runs (job_id);

CREATE TABLE attempts (
	run_id            INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	number            INTEGER NOT NULL CHECK (number >= 1),
	hint              TEXT NOT NULL DEFAULT '',
	outcome           TEXT NOT NULL DEFAULT '',
	outcome_kind      TEXT NOT NULL DEFAULT '',
	patch             BLOB,
	lines_added       INTEGER NOT NULL DEFAULT 0,
	lines_deleted     INTEGER NOT NULL DEFAULT 0,
	files_changed     INTEGER NOT NULL DEFAULT 0,
	agent_exit        INTEGER NOT NULL DEFAULT 0,
	agent_duration_ns INTEGER NOT NULL DEFAULT 0,
	grade_duration_ns INTEGER NOT NULL DEFAULT 0,
	cpu_seconds       REAL NOT NULL DEFAULT 0,
	finished_at       TEXT,
	detail            TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (run_id, number)
);

CREATE INDEX attempts_outcome_kind ON attempts (outcome_kind);
