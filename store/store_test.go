package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bestofn/bestofn/store"
)

// epoch is the first time the test clock returns; it has a nanosecond part so
// that round trips check full precision.
var epoch = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)

// clock is a fake DB.Now that moves one second forward on every call.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// MustOpenDB opens a database in a fresh temporary folder, with a ticking
// fake clock, and closes it when the test ends.
func MustOpenDB(tb testing.TB) *store.DB {
	tb.Helper()
	return mustOpenPath(tb, filepath.Join(tb.TempDir(), "bestofn.db"))
}

func mustOpenPath(tb testing.TB, path string) *store.DB {
	tb.Helper()
	db, err := store.Open(context.Background(), path)
	if err != nil {
		tb.Fatalf("Open(%q): %v", path, err)
	}
	c := &clock{t: epoch}
	db.Now = c.Now
	tb.Cleanup(func() {
		if err := db.Close(); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return db
}

// mustRecordJob records a fresh delivery with a run job for repo#issue and
// returns the job ID.
func mustRecordJob(tb testing.TB, db *store.DB, repo string, issue int) int64 {
	tb.Helper()
	d := store.Delivery{ID: fmt.Sprintf("delivery-%d", deliveryN.Add(1)), Event: "issues", Action: "labeled", Repo: repo, InstallationID: 7}
	id, dup, err := db.RecordDelivery(context.Background(), d, &store.Job{Issue: issue, Payload: []byte(`{}`)})
	if err != nil || dup {
		tb.Fatalf("RecordDelivery(%s): id=%d dup=%v err=%v", d.ID, id, dup, err)
	}
	return id
}

var deliveryN atomic.Int64

func mustJob(tb testing.TB, db *store.DB, id int64) *store.Job {
	tb.Helper()
	j, err := db.Job(context.Background(), id)
	if err != nil {
		tb.Fatalf("Job(%d): %v", id, err)
	}
	return j
}

func diff(tb testing.TB, what string, got, want any) {
	tb.Helper()
	if !reflect.DeepEqual(got, want) {
		tb.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()

	t.Run("ReopenKeepsData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "bestofn.db")
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		jobID, _, err := db.RecordDelivery(ctx, store.Delivery{ID: "d1", Event: "issues", Repo: "o/r"}, &store.Job{Issue: 3})
		if err != nil {
			t.Fatal(err)
		}
		run := &store.Run{JobID: jobID, Repo: "o/r", Issue: 3}
		if err := db.CreateRun(ctx, run); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}

		for i := 0; i < 2; i++ {
			db := mustOpenPath(t, path)
			if j := mustJob(t, db, jobID); j.Repo != "o/r" || j.Issue != 3 {
				t.Errorf("reopen %d: job = %+v", i, j)
			}
			if _, err := db.Run(ctx, run.ID); err != nil {
				t.Errorf("reopen %d: %v", i, err)
			}
			if _, dup, err := db.RecordDelivery(ctx, store.Delivery{ID: "d1"}, nil); err != nil || !dup {
				t.Errorf("reopen %d: RecordDelivery(d1) dup=%v err=%v, want dup", i, dup, err)
			}
		}

		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob("migrations/*.sql")
		if n != len(files) || n == 0 {
			t.Errorf("migrations rows = %d, want %d (each migration recorded once)", n, len(files))
		}
	})

	t.Run("CreatesParentFolder", func(t *testing.T) {
		db := mustOpenPath(t, filepath.Join(t.TempDir(), "a", "b", "bestofn.db"))
		if db.Path() == "" {
			t.Error("Path is empty")
		}
	})

	t.Run("ErrEmptyPath", func(t *testing.T) {
		if _, err := store.Open(ctx, ""); err == nil {
			t.Error("Open(\"\") succeeded")
		}
	})

	t.Run("ForeignKeysOnEveryConnection", func(t *testing.T) {
		db := MustOpenDB(t)
		// Several concurrent writes force the pool to open several connections.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- db.SaveAttempt(ctx, &store.Attempt{RunID: 999, Number: 1})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err == nil {
				t.Error("SaveAttempt for a missing run succeeded; foreign keys are off")
			}
		}
	})
}

func TestNotFound(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	tests := map[string]func() error{
		"Job":       func() error { _, err := db.Job(ctx, 42); return err },
		"Delivery":  func() error { _, err := db.Delivery(ctx, "nope"); return err },
		"ActiveJob": func() error { _, err := db.ActiveJob(ctx, "o/r", 1); return err },
		"FinishJob": func() error { return db.FinishJob(ctx, 42, store.JobDone, "") },
		"Run":       func() error { _, err := db.Run(ctx, 42); return err },
		"UpdateRun": func() error { return db.UpdateRun(ctx, &store.Run{ID: 42, Status: store.RunFailed}) },
	}
	for name, call := range tests {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		})
	}
}
