package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RecordRunDelivery is RecordDelivery for a delivery that starts a run: in
// the same transaction it looks for an active run job for job's repository
// and issue (queued or running, and holding the lock: not a Candidate that
// has not yet passed its checks, see TakeRunLock). When there is one, it stores busy instead
// of job (a reply saying a run is in progress; nil stores nothing but the
// delivery) and returns the active job. Transactions take the write lock at
// BEGIN, so of two deliveries racing for one issue exactly one gets its run
// job stored. dup is as for RecordDelivery.
func (db *DB) RecordRunDelivery(ctx context.Context, d Delivery, job, busy *Job) (jobID int64, dup bool, active *Job, err error) {
	if d.ID == "" {
		return 0, false, nil, errors.New("record delivery: empty delivery ID")
	}
	err = db.withTx(ctx, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE kind = 'run' AND repo = ? AND issue = ? AND status IN ('queued', 'running')
			  AND holds_lock = 1
			ORDER BY id LIMIT 1`, job.Repo, job.Issue)
		a, err := scanJob(row)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		default:
			active = a
		}
		store := job
		if active != nil {
			store = busy
		}
		jobID, dup, err = db.recordDelivery(ctx, tx, d, store)
		if dup {
			active = nil
		}
		return err
	})
	if err != nil {
		return 0, false, nil, fmt.Errorf("record delivery %s: %w", d.ID, err)
	}
	return jobID, dup, active, nil
}

// RequestCancel asks the active run job of repo's issue to stop: a queued
// one is cancelled at once, a running one is flagged for its worker (see
// CancelRequested). It returns the job, or an error wrapping ErrNotFound
// when no run is active.
func (db *DB) RequestCancel(ctx context.Context, repo string, issue int) (*Job, error) {
	var job *Job
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs
			WHERE kind = 'run' AND repo = ? AND issue = ? AND status IN ('queued', 'running')
			ORDER BY id LIMIT 1`, repo, issue))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		now := formatTime(db.now())
		if j.Status == JobQueued {
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = 'cancelled', error = 'cancelled before it started',
				cancel_requested = 1, updated_at = ? WHERE id = ?`, now, j.ID)
			j.Status = JobCancelled
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ?`, now, j.ID)
		}
		job = j
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cancel run of %s#%d: %w", repo, issue, err)
	}
	return job, nil
}

// CancelRequested reports whether RequestCancel was called for the job.
func (db *DB) CancelRequested(ctx context.Context, jobID int64) (bool, error) {
	var n int
	err := db.db.QueryRowContext(ctx, `SELECT cancel_requested FROM jobs WHERE id = ?`, jobID).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("job %d: %w", jobID, err)
	}
	return n != 0, nil
}

// RunForPR returns the newest run that opened or updated pull request pr of
// repo, or an error wrapping ErrNotFound: the store is how the bot knows a
// pull request is its own.
func (db *DB) RunForPR(ctx context.Context, repo string, pr int) (*Run, error) {
	var id int64
	err := db.db.QueryRowContext(ctx, `SELECT id FROM runs WHERE repo = ? AND pr_number = ? ORDER BY id DESC LIMIT 1`,
		repo, pr).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("run for %s#%d: %w", repo, pr, err)
	}
	return db.Run(ctx, id)
}

// RecordPROutcome records how the bot's pull request pr ended ("merged" or
// "closed") on every run that published to it, and returns how many runs
// that was.
func (db *DB) RecordPROutcome(ctx context.Context, repo string, pr int, outcome string) (int64, error) {
	var n int64
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runs SET pr_outcome = ? WHERE repo = ? AND pr_number = ?`, outcome, repo, pr)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record outcome of %s#%d: %w", repo, pr, err)
	}
	return n, nil
}

// PROutcome returns a run's pull request outcome: "merged", "closed" or "".
func (db *DB) PROutcome(ctx context.Context, runID int64) (string, error) {
	var s string
	err := db.db.QueryRowContext(ctx, `SELECT pr_outcome FROM runs WHERE id = ?`, runID).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("run %d: %w", runID, err)
	}
	return s, nil
}

// RecordInstallation records that an installation was created (active) or
// removed. Removing one also drops its queued jobs; it returns how many.
func (db *DB) RecordInstallation(ctx context.Context, id int64, account string, active bool) (dropped int64, err error) {
	err = db.withTx(ctx, func(tx *sql.Tx) error {
		now := formatTime(db.now())
		if _, err := tx.ExecContext(ctx, `INSERT INTO installations (id, account, active, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET account = excluded.account, active = excluded.active, updated_at = excluded.updated_at`,
			id, account, active, now); err != nil {
			return err
		}
		if active {
			return nil
		}
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = 'ignored', error = 'the installation was removed', updated_at = ?
			WHERE installation_id = ? AND status = 'queued'`, now, id)
		if err != nil {
			return err
		}
		dropped, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record installation %d: %w", id, err)
	}
	return dropped, nil
}

// InstallationActive reports whether an installation is recorded as active;
// known is false when the bot never heard of it.
func (db *DB) InstallationActive(ctx context.Context, id int64) (active, known bool, err error) {
	err = db.db.QueryRowContext(ctx, `SELECT active FROM installations WHERE id = ?`, id).Scan(&active)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("installation %d: %w", id, err)
	}
	return active, true, nil
}

// AttemptRecord is one attempt with what its run made of it, for stats.
type AttemptRecord struct {
	Attempt
	// Won says this attempt was its run's winner; PROutcome is how the run's
	// pull request ended ("merged", "closed" or "").
	Won       bool
	PROutcome string
}

// AttemptRecords returns every attempt of every run, oldest run first, with
// whether it won and how its run's pull request ended.
func (db *DB) AttemptRecords(ctx context.Context) ([]AttemptRecord, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT a.run_id, a.number, a.hint, a.outcome, a.outcome_kind,
		a.cost_micros, a.cost_estimated, a.detail, r.winner = a.number, r.pr_outcome
		FROM attempts a JOIN runs r ON r.id = a.run_id ORDER BY a.run_id, a.number`)
	if err != nil {
		return nil, fmt.Errorf("attempt records: %w", err)
	}
	defer rows.Close()
	var out []AttemptRecord
	for rows.Next() {
		var r AttemptRecord
		if err := rows.Scan(&r.RunID, &r.Number, &r.Hint, &r.Outcome, &r.OutcomeKind, &r.CostMicros, &r.CostEstimated,
			&r.Detail, &r.Won, &r.PROutcome); err != nil {
			return nil, fmt.Errorf("attempt records: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// RunActiveSince returns a run of repo's issue, made by another job than
// jobID, that was still going at or after since (it has not finished, or
// finished after since), or nil. A job that waited in the queue while such a
// run went on was a trigger during an active run.
func (db *DB) RunActiveSince(ctx context.Context, repo string, issue int, jobID int64, since time.Time) (*Run, error) {
	var id int64
	err := db.db.QueryRowContext(ctx, `SELECT id FROM runs
		WHERE repo = ? AND issue = ? AND (job_id IS NULL OR job_id != ?)
		  AND (finished_at IS NULL OR finished_at > ?)
		ORDER BY id DESC LIMIT 1`, repo, issue, jobID, formatTime(since)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("active run of %s#%d: %w", repo, issue, err)
	}
	return db.Run(ctx, id)
}

// TakeRunLock makes a Candidate run job hold its issue's run lock, once its
// trigger passed its checks, so later triggers are told at once that a run
// is in progress.
func (db *DB) TakeRunLock(ctx context.Context, jobID int64) error {
	err := db.withTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE jobs SET holds_lock = 1 WHERE id = ?`, jobID)
		return err
	})
	if err != nil {
		return fmt.Errorf("take run lock for job %d: %w", jobID, err)
	}
	return nil
}

// UnfinishedRuns returns the runs whose status is not final (a process
// stopped during them), oldest first.
func (db *DB) UnfinishedRuns(ctx context.Context) ([]*Run, error) {
	rows, err := db.db.QueryContext(ctx, `SELECT id FROM runs WHERE status NOT IN ('done', 'failed', 'cancelled') ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("unfinished runs: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("unfinished runs: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	var out []*Run
	for _, id := range ids {
		r, err := db.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
