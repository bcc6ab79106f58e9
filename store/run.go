package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RunStatus is the state of a Run.
type RunStatus string

// Run statuses, in the order a run moves through them; done, failed and
// cancelled are final.
const (
	RunPreparing  RunStatus = "preparing"
	RunAttempting RunStatus = "attempting"
	RunGrading    RunStatus = "grading"
	RunPublishing RunStatus = "publishing"
	RunDone       RunStatus = "done"
	RunFailed     RunStatus = "failed"
	RunCancelled  RunStatus = "cancelled"
)

// Final reports whether s is a final status (done, failed or cancelled).
func (s RunStatus) Final() bool {
	return s == RunDone || s == RunFailed || s == RunCancelled
}

func (s RunStatus) valid() bool {
	switch s {
	case RunPreparing, RunAttempting, RunGrading, RunPublishing, RunDone, RunFailed, RunCancelled:
		return true
	}
	return false
}

// Run is one best-of-N run for an issue.
type Run struct {
	ID              int64
	JobID           int64 // 0 when the run has no job (CLI runs)
	Repo            string
	Issue           int
	Status          RunStatus
	BaseCommit      string
	StatusCommentID int64
	PRNumber        int
	PRURL           string
	Winner          int    // attempt number, 0 for none
	Config          []byte // effective config as YAML or JSON
	Error           string
	StartedAt       time.Time
	FinishedAt      time.Time // zero when unset
}

// RunFilter selects runs for Runs. Zero fields match everything; Limit 0
// means no limit.
type RunFilter struct {
	Repo  string
	Issue int
	JobID int64
	Limit int
}

const runColumns = `id, job_id, repo, issue, status, base_commit, status_comment_id,
	pr_number, pr_url, winner, config, error, started_at, finished_at`

// CreateRun inserts r and sets r.ID and r.StartedAt (to Now); an empty Status
// becomes RunPreparing. It returns an error for an unknown status or a JobID
// that names no job.
func (db *DB) CreateRun(ctx context.Context, r *Run) error {
	if r.Status == "" {
		r.Status = RunPreparing
	}
	if !r.Status.valid() {
		return fmt.Errorf("create run: unknown status %q", r.Status)
	}
	started := db.now()
	var id int64
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			INSERT INTO runs (job_id, repo, issue, status, base_commit, status_comment_id,
				pr_number, pr_url, winner, config, error, started_at, finished_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			nullInt64(r.JobID), r.Repo, r.Issue, r.Status, r.BaseCommit, r.StatusCommentID,
			r.PRNumber, r.PRURL, r.Winner, r.Config, r.Error, formatTime(started), formatTime(r.FinishedAt))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return fmt.Errorf("create run for %s#%d: %w", r.Repo, r.Issue, err)
	}
	r.ID, r.StartedAt = id, started
	return nil
}

// UpdateRun writes every mutable field of r (all but ID, JobID, Repo, Issue
// and StartedAt). When the status is final and FinishedAt is zero it sets
// r.FinishedAt to Now. It returns an error wrapping ErrNotFound if the run
// does not exist.
func (db *DB) UpdateRun(ctx context.Context, r *Run) error {
	if !r.Status.valid() {
		return fmt.Errorf("update run %d: unknown status %q", r.ID, r.Status)
	}
	finished := r.FinishedAt
	if r.Status.Final() && finished.IsZero() {
		finished = db.now()
	}
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE runs SET status = ?, base_commit = ?, status_comment_id = ?, pr_number = ?,
				pr_url = ?, winner = ?, config = ?, error = ?, finished_at = ?
			WHERE id = ?`,
			r.Status, r.BaseCommit, r.StatusCommentID, r.PRNumber, r.PRURL, r.Winner,
			r.Config, r.Error, formatTime(finished), r.ID)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("update run %d: %w", r.ID, err)
	}
	r.FinishedAt = finished
	return nil
}

// FailUnfinishedRuns marks every run not in a final status as failed with
// errText and FinishedAt Now, for use at boot after a crash. It returns how
// many runs it changed.
func (db *DB) FailUnfinishedRuns(ctx context.Context, errText string) (int, error) {
	var n int64
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE runs SET status = 'failed', error = ?, finished_at = ?
			WHERE status NOT IN ('done', 'failed', 'cancelled')`,
			errText, formatTime(db.now()))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("fail unfinished runs: %w", err)
	}
	return int(n), nil
}

// Run returns the run with the given ID, or an error wrapping ErrNotFound.
func (db *DB) Run(ctx context.Context, id int64) (*Run, error) {
	r, err := scanRun(db.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("run %d: %w", id, err)
	}
	return r, nil
}

// Runs returns the runs matching f, newest (highest ID) first.
func (db *DB) Runs(ctx context.Context, f RunFilter) ([]*Run, error) {
	var where []string
	var args []any
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.Issue != 0 {
		where, args = append(where, "issue = ?"), append(args, f.Issue)
	}
	if f.JobID != 0 {
		where, args = append(where, "job_id = ?"), append(args, f.JobID)
	}
	q := `SELECT ` + runColumns + ` FROM runs` + whereClause(where) + ` ORDER BY id DESC` + limitClause(f.Limit)
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var runs []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

func scanRun(s scanner) (*Run, error) {
	var r Run
	var jobID sql.NullInt64
	var started, finished sql.NullString
	if err := s.Scan(&r.ID, &jobID, &r.Repo, &r.Issue, &r.Status, &r.BaseCommit, &r.StatusCommentID,
		&r.PRNumber, &r.PRURL, &r.Winner, &r.Config, &r.Error, &started, &finished); err != nil {
		return nil, err
	}
	r.JobID = jobID.Int64
	var err error
	if r.StartedAt, err = parseTime(started); err != nil {
		return nil, err
	}
	if r.FinishedAt, err = parseTime(finished); err != nil {
		return nil, err
	}
	return &r, nil
}

// Attempt is one of a run's N attempts.
type Attempt struct {
	RunID         int64
	Number        int // 1-based
	Hint          string
	Outcome       string // display text, e.g. "tests failed (1 of 4)"
	OutcomeKind   string // "pass", "tests_failed", "edited_tests", ...
	Patch         []byte
	LinesAdded    int
	LinesDeleted  int
	FilesChanged  int
	AgentExit     int
	AgentDuration time.Duration
	GradeDuration time.Duration
	CPUSeconds    float64
	// CostMicros is what the attempt's sandbox cost, in microdollars;
	// CostEstimated says it was estimated rather than charged.
	CostMicros    int64
	CostEstimated bool
	FinishedAt    time.Time // zero when unset
	Detail        string
}

const attemptColumns = `run_id, number, hint, outcome, outcome_kind, patch, lines_added,
	lines_deleted, files_changed, agent_exit, agent_duration_ns, grade_duration_ns,
	cpu_seconds, finished_at, detail, cost_micros, cost_estimated`

// SaveAttempt inserts a, or replaces every field of the attempt with the same
// RunID and Number. It returns an error if Number is below 1 or the run does
// not exist.
func (db *DB) SaveAttempt(ctx context.Context, a *Attempt) error {
	if a.Number < 1 {
		return fmt.Errorf("save attempt %d of run %d: number must be at least 1", a.Number, a.RunID)
	}
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `
			INSERT INTO attempts (`+attemptColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (run_id, number) DO UPDATE SET
				hint = excluded.hint, outcome = excluded.outcome, outcome_kind = excluded.outcome_kind,
				patch = excluded.patch, lines_added = excluded.lines_added,
				lines_deleted = excluded.lines_deleted, files_changed = excluded.files_changed,
				agent_exit = excluded.agent_exit, agent_duration_ns = excluded.agent_duration_ns,
				grade_duration_ns = excluded.grade_duration_ns, cpu_seconds = excluded.cpu_seconds,
				finished_at = excluded.finished_at, detail = excluded.detail,
				cost_micros = excluded.cost_micros, cost_estimated = excluded.cost_estimated`,
			a.RunID, a.Number, a.Hint, a.Outcome, a.OutcomeKind, a.Patch, a.LinesAdded,
			a.LinesDeleted, a.FilesChanged, a.AgentExit, int64(a.AgentDuration), int64(a.GradeDuration),
			a.CPUSeconds, formatTime(a.FinishedAt), a.Detail, a.CostMicros, a.CostEstimated)
		return err
	})
	if err != nil {
		return fmt.Errorf("save attempt %d of run %d: %w", a.Number, a.RunID, err)
	}
	return nil
}

// Attempts returns the run's attempts ordered by number; a run with none (or
// no such run) gives an empty slice.
func (db *DB) Attempts(ctx context.Context, runID int64) ([]*Attempt, error) {
	rows, err := db.db.QueryContext(ctx,
		`SELECT `+attemptColumns+` FROM attempts WHERE run_id = ? ORDER BY number`, runID)
	if err != nil {
		return nil, fmt.Errorf("attempts of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []*Attempt
	for rows.Next() {
		var a Attempt
		var agentNS, gradeNS int64
		var finished sql.NullString
		if err := rows.Scan(&a.RunID, &a.Number, &a.Hint, &a.Outcome, &a.OutcomeKind, &a.Patch,
			&a.LinesAdded, &a.LinesDeleted, &a.FilesChanged, &a.AgentExit, &agentNS, &gradeNS,
			&a.CPUSeconds, &finished, &a.Detail, &a.CostMicros, &a.CostEstimated); err != nil {
			return nil, fmt.Errorf("attempts of run %d: %w", runID, err)
		}
		a.AgentDuration, a.GradeDuration = time.Duration(agentNS), time.Duration(gradeNS)
		if a.FinishedAt, err = parseTime(finished); err != nil {
			return nil, fmt.Errorf("attempts of run %d: %w", runID, err)
		}
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts of run %d: %w", runID, err)
	}
	return out, nil
}
