package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/bestofn/bestofn/store"
)

func TestRun(t *testing.T) {
	ctx := context.Background()

	t.Run("RoundTrip", func(t *testing.T) {
		db := MustOpenDB(t)
		jobID := mustRecordJob(t, db, "o/r", 9) // clock tick 1
		r := &store.Run{
			JobID: jobID, Repo: "o/r", Issue: 9, Status: store.RunPreparing,
			Config: []byte("attempts: 5\nhints:\n  - minimal\n"),
		}
		if err := db.CreateRun(ctx, r); err != nil { // tick 2
			t.Fatal(err)
		}
		if r.ID == 0 || !r.StartedAt.Equal(epoch.Add(2*time.Second)) {
			t.Fatalf("after CreateRun: ID %d StartedAt %v", r.ID, r.StartedAt)
		}
		got, err := db.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "created run", got, r)

		upd := *r
		upd.Status = store.RunPublishing
		upd.BaseCommit = "0123456789abcdef0123456789abcdef01234567"
		upd.StatusCommentID = 1 << 40
		upd.PRNumber = 77
		upd.PRURL = "https://github.com/o/r/pull/77"
		upd.Winner = 3
		upd.Config = []byte(`{"attempts":3}`)
		upd.Error = "partial: attempt 2 sandbox error"
		upd.FinishedAt = time.Date(2025, 3, 2, 1, 2, 3, 999999999, time.UTC)
		if err := db.UpdateRun(ctx, &upd); err != nil {
			t.Fatal(err)
		}
		got, err = db.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "updated run", got, &upd)

		// Immutable fields are not written.
		bogus := upd
		bogus.Repo, bogus.Issue, bogus.StartedAt = "x/y", 1, epoch
		if err := db.UpdateRun(ctx, &bogus); err != nil {
			t.Fatal(err)
		}
		if got, _ := db.Run(ctx, r.ID); got.Repo != "o/r" || got.Issue != 9 || !got.StartedAt.Equal(r.StartedAt) {
			t.Errorf("immutable fields changed: %+v", got)
		}
	})

	t.Run("FinalStatusSetsFinishedAt", func(t *testing.T) {
		db := MustOpenDB(t)
		r := &store.Run{Repo: "o/r", Issue: 1}
		if err := db.CreateRun(ctx, r); err != nil { // tick 1
			t.Fatal(err)
		}
		if r.Status != store.RunPreparing || r.JobID != 0 {
			t.Errorf("defaults: %+v", r)
		}
		r.Status = store.RunAttempting
		if err := db.UpdateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		if !r.FinishedAt.IsZero() {
			t.Errorf("FinishedAt = %v for a non-final status", r.FinishedAt)
		}
		r.Status = store.RunCancelled
		if err := db.UpdateRun(ctx, r); err != nil { // tick 2
			t.Fatal(err)
		}
		want := epoch.Add(2 * time.Second)
		got, err := db.Run(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !r.FinishedAt.Equal(want) || !got.FinishedAt.Equal(want) {
			t.Errorf("FinishedAt = %v, stored %v; want %v", r.FinishedAt, got.FinishedAt, want)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		db := MustOpenDB(t)
		tests := map[string]func() error{
			"CreateUnknownStatus": func() error { return db.CreateRun(ctx, &store.Run{Repo: "o/r", Status: "bogus"}) },
			"CreateMissingJob":    func() error { return db.CreateRun(ctx, &store.Run{Repo: "o/r", JobID: 404}) },
			"UpdateUnknownStatus": func() error { return db.UpdateRun(ctx, &store.Run{ID: 1, Status: ""}) },
		}
		for name, call := range tests {
			t.Run(name, func(t *testing.T) {
				if err := call(); err == nil {
					t.Error("succeeded")
				}
			})
		}
	})

	t.Run("FailUnfinishedRuns", func(t *testing.T) {
		db := MustOpenDB(t)
		statuses := []store.RunStatus{store.RunPreparing, store.RunGrading, store.RunDone, store.RunCancelled}
		var runs []*store.Run
		for _, s := range statuses {
			r := &store.Run{Repo: "o/r", Issue: 1, Status: s}
			if err := db.CreateRun(ctx, r); err != nil {
				t.Fatal(err)
			}
			runs = append(runs, r)
		}
		n, err := db.FailUnfinishedRuns(ctx, "interrupted by restart")
		if err != nil || n != 2 {
			t.Fatalf("FailUnfinishedRuns = %d, %v; want 2", n, err)
		}
		for i, want := range []store.RunStatus{store.RunFailed, store.RunFailed, store.RunDone, store.RunCancelled} {
			got, err := db.Run(ctx, runs[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != want {
				t.Errorf("run %d status = %s, want %s", got.ID, got.Status, want)
			}
			if want == store.RunFailed && (got.Error != "interrupted by restart" || got.FinishedAt.IsZero()) {
				t.Errorf("failed run = %+v", got)
			}
		}
	})
}

func TestRuns(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	jobID := mustRecordJob(t, db, "o/a", 1)
	create := func(jobID int64, repo string, issue int) int64 {
		t.Helper()
		r := &store.Run{JobID: jobID, Repo: repo, Issue: issue}
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	a1 := create(jobID, "o/a", 1)
	a2 := create(0, "o/a", 2)
	b1 := create(0, "o/b", 1)
	a1again := create(0, "o/a", 1)

	tests := map[string]struct {
		filter store.RunFilter
		want   []int64
	}{
		"All":          {store.RunFilter{}, []int64{a1again, b1, a2, a1}},
		"Repo":         {store.RunFilter{Repo: "o/a"}, []int64{a1again, a2, a1}},
		"RepoAndIssue": {store.RunFilter{Repo: "o/a", Issue: 1}, []int64{a1again, a1}},
		"IssueAnyRepo": {store.RunFilter{Issue: 1}, []int64{a1again, b1, a1}},
		"Job":          {store.RunFilter{JobID: jobID}, []int64{a1}},
		"Limit":        {store.RunFilter{Repo: "o/a", Limit: 1}, []int64{a1again}},
		"NoMatch":      {store.RunFilter{Repo: "o/zzz"}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			runs, err := db.Runs(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range runs {
				got = append(got, r.ID)
			}
			diff(t, "run IDs", got, tt.want)
		})
	}
}

func TestAttempts(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	run := &store.Run{Repo: "o/r", Issue: 1}
	if err := db.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}

	if got, err := db.Attempts(ctx, run.ID); err != nil || len(got) != 0 {
		t.Fatalf("Attempts of a new run = %v, %v; want none", got, err)
	}

	binary := []byte("diff --git a/x b/x\n\x00\x01\xff\xfe binary \x00 tail\n")
	second := &store.Attempt{
		RunID: run.ID, Number: 2, Hint: "write the test first", Outcome: "passed", OutcomeKind: "pass",
		Patch: binary, LinesAdded: 10, LinesDeleted: 3, FilesChanged: 2, AgentExit: 0,
		AgentDuration: 3*time.Minute + 7*time.Nanosecond, GradeDuration: 41*time.Second + 1,
		CPUSeconds: 123.456, CostMicros: 642, CostEstimated: true, FinishedAt: time.Date(2025, 3, 1, 13, 0, 0, 1, time.UTC), Detail: "ok 4 of 4",
	}
	first := &store.Attempt{
		RunID: run.ID, Number: 1, Hint: "minimal change", Outcome: "tests failed (1 of 4)",
		OutcomeKind: "tests_failed", Patch: []byte("--- a\n+++ b\n"), LinesAdded: 1, AgentExit: 2,
		AgentDuration: time.Second, Detail: "FAIL TestX",
	}
	for _, a := range []*store.Attempt{second, first} { // out of order on purpose
		if err := db.SaveAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Attempts(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "attempts", got, []*store.Attempt{first, second})

	// Upsert replaces every field.
	replaced := &store.Attempt{
		RunID: run.ID, Number: 1, Hint: "minimal change", Outcome: "edited tests", OutcomeKind: "edited_tests",
		AgentExit: 1, CPUSeconds: 0.5, FinishedAt: epoch,
	}
	if err := db.SaveAttempt(ctx, replaced); err != nil {
		t.Fatal(err)
	}
	got, err = db.Attempts(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "attempts after upsert", got, []*store.Attempt{replaced, second})

	errTests := map[string]*store.Attempt{
		"NumberZero": {RunID: run.ID, Number: 0},
		"MissingRun": {RunID: run.ID + 100, Number: 1},
	}
	for name, a := range errTests {
		t.Run(name, func(t *testing.T) {
			if err := db.SaveAttempt(ctx, a); err == nil {
				t.Error("SaveAttempt succeeded")
			}
		})
	}
}
