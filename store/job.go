package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Delivery is one webhook delivery, identified by its X-GitHub-Delivery header.
type Delivery struct {
	ID             string
	Event          string
	Action         string
	Repo           string
	InstallationID int64
	// ReceivedAt is set by RecordDelivery.
	ReceivedAt time.Time
}

// JobKindRun is the Kind of a job that makes a run for an issue. At most one
// such job per repository and issue is running at a time.
const JobKindRun = "run"

// JobStatus is the state of a Job.
type JobStatus string

// Job statuses. A job starts queued, becomes running when claimed and ends
// done, failed or ignored.
const (
	JobQueued  JobStatus = "queued"
	JobRunning JobStatus = "running"
	JobDone    JobStatus = "done"
	JobFailed  JobStatus = "failed"
	JobIgnored JobStatus = "ignored"
	// JobCancelled is a job stopped by `/bestofn cancel`.
	JobCancelled JobStatus = "cancelled"
)

// Job is durable work made from a delivery and run by a worker.
type Job struct {
	ID             int64
	DeliveryID     string
	Kind           string
	InstallationID int64
	Repo           string // owner/name
	Issue          int
	Payload        []byte // JSON the handler built
	Status         JobStatus
	Error          string
	Tries          int
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// Candidate marks a run job that does not hold its issue's run lock at
	// intake (RecordRunDelivery ignores it): its trigger is checked when it
	// runs. Written only.
	Candidate bool
}

// JobFilter selects jobs for Jobs. Zero fields match everything; Limit 0
// means no limit.
type JobFilter struct {
	Status JobStatus
	Repo   string
	Issue  int
	Limit  int
}

const jobColumns = `id, delivery_id, kind, installation_id, repo, issue, payload,
	status, error, tries, created_at, updated_at`

// RecordDelivery inserts d and, when job is not nil, job in status queued,
// in one transaction. It returns the new job's ID (0 when job is nil) and sets
// job's ID, DeliveryID, Status, Tries and times; an empty Kind becomes
// JobKindRun, and an empty Repo or zero InstallationID is taken from d.
// A delivery ID seen before gives dup=true, writes nothing and returns a nil
// error.
func (db *DB) RecordDelivery(ctx context.Context, d Delivery, job *Job) (jobID int64, dup bool, err error) {
	if d.ID == "" {
		return 0, false, errors.New("record delivery: empty delivery ID")
	}
	err = db.withTx(ctx, func(tx *sql.Tx) error {
		jobID, dup, err = db.recordDelivery(ctx, tx, d, job)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	return jobID, dup, nil
}

// recordDelivery is RecordDelivery inside tx.
func (db *DB) recordDelivery(ctx context.Context, tx *sql.Tx, d Delivery, job *Job) (jobID int64, dup bool, err error) {
	now := db.now()
	res, err := tx.ExecContext(ctx, `
		INSERT INTO deliveries (id, event, action, repo, installation_id, received_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`,
		d.ID, d.Event, d.Action, d.Repo, d.InstallationID, formatTime(now))
	if err != nil {
		return 0, false, err
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 || job == nil {
		return 0, n == 0 && err == nil, err
	}
	j := *job
	j.DeliveryID = d.ID
	if j.Kind == "" {
		j.Kind = JobKindRun
	}
	if j.Repo == "" {
		j.Repo = d.Repo
	}
	if j.InstallationID == 0 {
		j.InstallationID = d.InstallationID
	}
	j.Status, j.Error, j.Tries = JobQueued, "", 0
	j.CreatedAt, j.UpdatedAt = now, now
	res, err = tx.ExecContext(ctx, `
		INSERT INTO jobs (delivery_id, kind, installation_id, repo, issue, payload,
			status, error, tries, created_at, updated_at, holds_lock)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.DeliveryID, j.Kind, j.InstallationID, j.Repo, j.Issue, j.Payload,
		j.Status, j.Error, j.Tries, formatTime(now), formatTime(now), !j.Candidate)
	if err != nil {
		return 0, false, err
	}
	if j.ID, err = res.LastInsertId(); err != nil {
		return 0, false, err
	}
	*job = j
	return j.ID, false, nil
}

// Delivery returns the delivery with the given ID, or an error wrapping
// ErrNotFound.
func (db *DB) Delivery(ctx context.Context, id string) (*Delivery, error) {
	var d Delivery
	var received sql.NullString
	err := db.db.QueryRowContext(ctx, `
		SELECT id, event, action, repo, installation_id, received_at
		FROM deliveries WHERE id = ?`, id).
		Scan(&d.ID, &d.Event, &d.Action, &d.Repo, &d.InstallationID, &received)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("delivery %s: %w", id, ErrNotFound)
	}
	if err == nil {
		d.ReceivedAt, err = parseTime(received)
	}
	if err != nil {
		return nil, fmt.Errorf("delivery %s: %w", id, err)
	}
	return &d, nil
}

// ClaimJob atomically moves the oldest (lowest ID) queued job to running,
// increments its Tries and returns it. A queued JobKindRun job is skipped
// while another run job for the same repository and issue is running. It
// returns (nil, nil) when there is nothing to claim.
func (db *DB) ClaimJob(ctx context.Context) (*Job, error) {
	return db.claim(ctx, false)
}

// ClaimControlJob is ClaimJob for every kind but JobKindRun: replies and
// commands (cancel above all) that must not wait behind long runs.
func (db *DB) ClaimControlJob(ctx context.Context) (*Job, error) {
	return db.claim(ctx, true)
}

func (db *DB) claim(ctx context.Context, controlOnly bool) (*Job, error) {
	only := ""
	if controlOnly {
		only = "AND q.kind != 'run'"
	}
	var job *Job
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		var id int64
		err := tx.QueryRowContext(ctx, `
			SELECT q.id FROM jobs q
			WHERE q.status = 'queued' `+only+`
			  AND NOT (q.kind = 'run' AND EXISTS (
				SELECT 1 FROM jobs r
				WHERE r.status = 'running' AND r.kind = 'run'
				  AND r.repo = q.repo AND r.issue = q.issue))
			ORDER BY q.id LIMIT 1`).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `
			UPDATE jobs SET status = 'running', tries = tries + 1, updated_at = ?
			WHERE id = ?`, formatTime(db.now()), id); err != nil {
			return err
		}
		job, err = findJob(ctx, tx, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim job: %w", err)
	}
	return job, nil
}

// FinishJob sets the job's final status (done, failed or ignored) and error
// text. It returns an error wrapping ErrNotFound if the job does not exist,
// and an error for any other status.
func (db *DB) FinishJob(ctx context.Context, id int64, status JobStatus, errText string) error {
	switch status {
	case JobDone, JobFailed, JobIgnored, JobCancelled:
	default:
		return fmt.Errorf("finish job %d: status %q is not final", id, status)
	}
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE jobs SET status = ?, error = ?, updated_at = ? WHERE id = ?`,
			status, errText, formatTime(db.now()), id)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("finish job %d: %w", id, err)
	}
	return nil
}

// RequeueRunning moves every running job back to queued, for use at boot
// after a crash. It returns how many jobs it moved.
func (db *DB) RequeueRunning(ctx context.Context) (int, error) {
	var n int64
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE jobs SET status = 'queued', updated_at = ? WHERE status = 'running'`,
			formatTime(db.now()))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("requeue running jobs: %w", err)
	}
	return int(n), nil
}

// Job returns the job with the given ID, or an error wrapping ErrNotFound.
func (db *DB) Job(ctx context.Context, id int64) (*Job, error) {
	job, err := findJob(ctx, db.db, id)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return job, nil
}

// ActiveJob returns the oldest queued or running JobKindRun job for the
// repository and issue, or an error wrapping ErrNotFound if there is none.
func (db *DB) ActiveJob(ctx context.Context, repo string, issue int) (*Job, error) {
	row := db.db.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE kind = 'run' AND repo = ? AND issue = ? AND status IN ('queued', 'running')
		ORDER BY id LIMIT 1`, repo, issue)
	job, err := scanJob(row)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("active job for %s#%d: %w", repo, issue, err)
	}
	return job, nil
}

// Jobs returns the jobs matching f, newest first.
func (db *DB) Jobs(ctx context.Context, f JobFilter) ([]*Job, error) {
	var where []string
	var args []any
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, f.Status)
	}
	if f.Repo != "" {
		where, args = append(where, "repo = ?"), append(args, f.Repo)
	}
	if f.Issue != 0 {
		where, args = append(where, "issue = ?"), append(args, f.Issue)
	}
	q := `SELECT ` + jobColumns + ` FROM jobs` + whereClause(where) + ` ORDER BY id DESC` + limitClause(f.Limit)
	rows, err := db.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var jobs []*Job
	for rows.Next() {
		job, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		jobs = append(jobs, job)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}

// findJob reads one job; a missing row gives ErrNotFound.
func findJob(ctx context.Context, q querier, id int64) (*Job, error) {
	job, err := scanJob(q.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return job, err
}

func scanJob(s scanner) (*Job, error) {
	var j Job
	var created, updated sql.NullString
	if err := s.Scan(&j.ID, &j.DeliveryID, &j.Kind, &j.InstallationID, &j.Repo, &j.Issue,
		&j.Payload, &j.Status, &j.Error, &j.Tries, &created, &updated); err != nil {
		return nil, err
	}
	var err error
	if j.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	if j.UpdatedAt, err = parseTime(updated); err != nil {
		return nil, err
	}
	return &j, nil
}

// mustAffect turns an update that touched no row into ErrNotFound.
func mustAffect(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func whereClause(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

func limitClause(n int) string {
	if n <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d", n)
}
