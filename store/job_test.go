package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/bestofn/bestofn/store"
)

func TestRecordDelivery(t *testing.T) {
	ctx := context.Background()

	t.Run("WithJob", func(t *testing.T) {
		db := MustOpenDB(t)
		d := store.Delivery{ID: "d1", Event: "issue_comment", Action: "created", Repo: "o/r", InstallationID: 7}
		job := &store.Job{Issue: 12, Payload: []byte(`{"command":"run"}`)}
		id, dup, err := db.RecordDelivery(ctx, d, job)
		if err != nil || dup || id == 0 {
			t.Fatalf("RecordDelivery = %d, %v, %v", id, dup, err)
		}
		at := epoch.Add(time.Second)
		want := &store.Job{
			ID: id, DeliveryID: "d1", Kind: store.JobKindRun, InstallationID: 7, Repo: "o/r", Issue: 12,
			Payload: []byte(`{"command":"run"}`), Status: store.JobQueued, CreatedAt: at, UpdatedAt: at,
		}
		diff(t, "job argument after RecordDelivery", job, want)
		diff(t, "stored job", mustJob(t, db, id), want)

		got, err := db.Delivery(ctx, "d1")
		if err != nil {
			t.Fatal(err)
		}
		d.ReceivedAt = at
		diff(t, "stored delivery", got, &d)
	})

	t.Run("JobFieldsWinOverDelivery", func(t *testing.T) {
		db := MustOpenDB(t)
		id, _, err := db.RecordDelivery(ctx,
			store.Delivery{ID: "d1", Repo: "o/r", InstallationID: 7},
			&store.Job{Kind: "cancel", Repo: "o/other", InstallationID: 8, Issue: 1, DeliveryID: "ignored"})
		if err != nil {
			t.Fatal(err)
		}
		j := mustJob(t, db, id)
		if j.Kind != "cancel" || j.Repo != "o/other" || j.InstallationID != 8 || j.DeliveryID != "d1" {
			t.Errorf("job = %+v", j)
		}
	})

	t.Run("NilJobStoresOnlyDelivery", func(t *testing.T) {
		db := MustOpenDB(t)
		id, dup, err := db.RecordDelivery(ctx, store.Delivery{ID: "d1", Event: "ping"}, nil)
		if err != nil || dup || id != 0 {
			t.Fatalf("RecordDelivery = %d, %v, %v; want 0, false, nil", id, dup, err)
		}
		if _, err := db.Delivery(ctx, "d1"); err != nil {
			t.Errorf("Delivery: %v", err)
		}
		jobs, err := db.Jobs(ctx, store.JobFilter{})
		if err != nil || len(jobs) != 0 {
			t.Errorf("Jobs = %v, %v; want none", jobs, err)
		}
	})

	t.Run("DuplicateWritesNothing", func(t *testing.T) {
		db := MustOpenDB(t)
		d := store.Delivery{ID: "d1", Event: "issues", Repo: "o/r"}
		first, dup, err := db.RecordDelivery(ctx, d, &store.Job{Issue: 1})
		if err != nil || dup {
			t.Fatalf("first RecordDelivery = %d, %v, %v", first, dup, err)
		}
		for _, job := range []*store.Job{{Issue: 1}, nil} {
			var before store.Job
			if job != nil {
				before = *job
			}
			id, dup, err := db.RecordDelivery(ctx, d, job)
			if err != nil || !dup || id != 0 {
				t.Errorf("redelivery = %d, %v, %v; want 0, true, nil", id, dup, err)
			}
			if job != nil {
				diff(t, "job argument after duplicate", *job, before)
			}
		}
		jobs, err := db.Jobs(ctx, store.JobFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].ID != first {
			t.Errorf("Jobs = %d jobs, want only job %d", len(jobs), first)
		}
	})

	t.Run("ErrEmptyID", func(t *testing.T) {
		db := MustOpenDB(t)
		if _, _, err := db.RecordDelivery(ctx, store.Delivery{Event: "issues"}, &store.Job{}); err == nil {
			t.Error("RecordDelivery with empty ID succeeded")
		}
	})
}

func TestClaimJob(t *testing.T) {
	ctx := context.Background()

	t.Run("NoneQueued", func(t *testing.T) {
		db := MustOpenDB(t)
		j, err := db.ClaimJob(ctx)
		if j != nil || err != nil {
			t.Errorf("ClaimJob = %v, %v; want nil, nil", j, err)
		}
	})

	t.Run("OldestFirst", func(t *testing.T) {
		db := MustOpenDB(t)
		ids := []int64{mustRecordJob(t, db, "o/r", 1), mustRecordJob(t, db, "o/r", 2), mustRecordJob(t, db, "o/s", 1)}
		for _, want := range ids {
			j, err := db.ClaimJob(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if j == nil || j.ID != want || j.Status != store.JobRunning || j.Tries != 1 {
				t.Fatalf("ClaimJob = %+v; want job %d running with 1 try", j, want)
			}
			if !j.UpdatedAt.After(j.CreatedAt) {
				t.Errorf("UpdatedAt %v not after CreatedAt %v", j.UpdatedAt, j.CreatedAt)
			}
		}
		if j, err := db.ClaimJob(ctx); j != nil || err != nil {
			t.Errorf("ClaimJob after all claimed = %v, %v", j, err)
		}
	})

	t.Run("OneRunningRunPerIssue", func(t *testing.T) {
		db := MustOpenDB(t)
		first := mustRecordJob(t, db, "o/r", 1)
		second := mustRecordJob(t, db, "o/r", 1)
		other := mustRecordJob(t, db, "o/r", 2)
		claim := func(want int64) {
			t.Helper()
			j, err := db.ClaimJob(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			if j != nil {
				got = j.ID
			}
			if got != want {
				t.Fatalf("ClaimJob = job %d, want %d", got, want)
			}
		}
		claim(first)
		active, err := db.ActiveJob(ctx, "o/r", 1)
		if err != nil || active.ID != first {
			t.Errorf("ActiveJob = %+v, %v; want job %d", active, err, first)
		}
		claim(other)
		claim(0) // second waits for first
		if err := db.FinishJob(ctx, first, store.JobDone, ""); err != nil {
			t.Fatal(err)
		}
		active, err = db.ActiveJob(ctx, "o/r", 1)
		if err != nil || active.ID != second {
			t.Errorf("ActiveJob = %+v, %v; want job %d", active, err, second)
		}
		claim(second)
	})

	t.Run("ConcurrentClaimsEachJobOnce", func(t *testing.T) {
		db := MustOpenDB(t)
		const workers, perWorker = 8, 20
		want := map[int64]bool{}
		for i := 0; i < workers*perWorker; i++ {
			want[mustRecordJob(t, db, "o/r", i+1)] = true
		}
		var (
			mu      sync.Mutex
			claimed = map[int64]int{}
			wg      sync.WaitGroup
			errs    = make(chan error, workers)
		)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j, err := db.ClaimJob(ctx)
					if err != nil {
						errs <- err
						return
					}
					if j == nil {
						return
					}
					mu.Lock()
					claimed[j.ID]++
					mu.Unlock()
					if err := db.FinishJob(ctx, j.ID, store.JobDone, ""); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("worker: %v", err)
		}
		if len(claimed) != len(want) {
			t.Errorf("claimed %d distinct jobs, want %d", len(claimed), len(want))
		}
		for id, n := range claimed {
			if n != 1 || !want[id] {
				t.Errorf("job %d claimed %d times", id, n)
			}
		}
		done, err := db.Jobs(ctx, store.JobFilter{Status: store.JobDone})
		if err != nil || len(done) != len(want) {
			t.Errorf("done jobs = %d, %v; want %d", len(done), err, len(want))
		}
	})
}

func TestFinishJob(t *testing.T) {
	ctx := context.Background()
	tests := map[string]struct {
		status  store.JobStatus
		errText string
		wantErr bool
	}{
		"Done":       {status: store.JobDone},
		"Failed":     {status: store.JobFailed, errText: "sandbox error (disk full)"},
		"Ignored":    {status: store.JobIgnored, errText: "no write access"},
		"ErrQueued":  {status: store.JobQueued, wantErr: true},
		"ErrRunning": {status: store.JobRunning, wantErr: true},
		"ErrUnknown": {status: "bogus", wantErr: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			db := MustOpenDB(t)
			id := mustRecordJob(t, db, "o/r", 1)
			if _, err := db.ClaimJob(ctx); err != nil {
				t.Fatal(err)
			}
			before := mustJob(t, db, id)
			err := db.FinishJob(ctx, id, tt.status, tt.errText)
			if (err != nil) != tt.wantErr {
				t.Fatalf("FinishJob err = %v, wantErr %v", err, tt.wantErr)
			}
			got := mustJob(t, db, id)
			if tt.wantErr {
				diff(t, "job after refused FinishJob", got, before)
				return
			}
			if got.Status != tt.status || got.Error != tt.errText || got.Tries != 1 {
				t.Errorf("job = %+v", got)
			}
			if !got.UpdatedAt.After(before.UpdatedAt) {
				t.Errorf("UpdatedAt %v not after %v", got.UpdatedAt, before.UpdatedAt)
			}
		})
	}
}

func TestRequeueRunning(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	var ids []int64
	for i := 1; i <= 4; i++ {
		ids = append(ids, mustRecordJob(t, db, "o/r", i))
	}
	for range 3 {
		if _, err := db.ClaimJob(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.FinishJob(ctx, ids[0], store.JobFailed, "boom"); err != nil {
		t.Fatal(err)
	}

	n, err := db.RequeueRunning(ctx)
	if err != nil || n != 2 {
		t.Fatalf("RequeueRunning = %d, %v; want 2", n, err)
	}
	want := map[int64]struct {
		status store.JobStatus
		tries  int
	}{
		ids[0]: {store.JobFailed, 1},
		ids[1]: {store.JobQueued, 1},
		ids[2]: {store.JobQueued, 1},
		ids[3]: {store.JobQueued, 0},
	}
	for id, w := range want {
		if j := mustJob(t, db, id); j.Status != w.status || j.Tries != w.tries {
			t.Errorf("job %d = %s with %d tries, want %s with %d", id, j.Status, j.Tries, w.status, w.tries)
		}
	}
	if n, err := db.RequeueRunning(ctx); err != nil || n != 0 {
		t.Errorf("second RequeueRunning = %d, %v; want 0", n, err)
	}

	j, err := db.ClaimJob(ctx)
	if err != nil || j == nil || j.ID != ids[1] || j.Tries != 2 {
		t.Errorf("ClaimJob after requeue = %+v, %v; want job %d with 2 tries", j, err, ids[1])
	}
}

func TestJobs(t *testing.T) {
	ctx := context.Background()
	db := MustOpenDB(t)
	a1 := mustRecordJob(t, db, "o/a", 1)
	a2 := mustRecordJob(t, db, "o/a", 2)
	b1 := mustRecordJob(t, db, "o/b", 1)
	a1again := mustRecordJob(t, db, "o/a", 1)
	if _, err := db.ClaimJob(ctx); err != nil { // claims a1
		t.Fatal(err)
	}
	tests := map[string]struct {
		filter store.JobFilter
		want   []int64
	}{
		"All":          {store.JobFilter{}, []int64{a1again, b1, a2, a1}},
		"Repo":         {store.JobFilter{Repo: "o/a"}, []int64{a1again, a2, a1}},
		"RepoAndIssue": {store.JobFilter{Repo: "o/a", Issue: 1}, []int64{a1again, a1}},
		"Status":       {store.JobFilter{Status: store.JobRunning}, []int64{a1}},
		"Limit":        {store.JobFilter{Limit: 2}, []int64{a1again, b1}},
		"NoMatch":      {store.JobFilter{Repo: "o/zzz"}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			jobs, err := db.Jobs(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			diff(t, "job IDs", got, tt.want)
		})
	}
}

func TestCanceledContext(t *testing.T) {
	db := MustOpenDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := db.ClaimJob(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ClaimJob(canceled ctx) err = %v, want context.Canceled", err)
	}
}
