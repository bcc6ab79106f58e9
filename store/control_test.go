package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/bestofn/bestofn/store"
)

func runJob(repo string, issue int) *store.Job {
	return &store.Job{Kind: store.JobKindRun, InstallationID: 1, Repo: repo, Issue: issue}
}

// TestRecordRunDeliveryRace: of many deliveries racing to start a run on one
// issue, exactly one stores its run job; the others store their busy reply.
func TestRecordRunDeliveryRace(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	actives := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			busy := &store.Job{Kind: "reply", InstallationID: 1, Repo: "o/r", Issue: 5}
			_, dup, active, err := db.RecordRunDelivery(ctx, store.Delivery{ID: fmt.Sprintf("d%d", i), Event: "issue_comment"}, runJob("o/r", 5), busy)
			if err != nil || dup {
				t.Errorf("delivery %d: dup=%v err=%v", i, dup, err)
			}
			if active != nil {
				mu.Lock()
				actives++
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	jobs, _ := db.Jobs(ctx, store.JobFilter{})
	runs, replies := 0, 0
	for _, j := range jobs {
		switch j.Kind {
		case store.JobKindRun:
			runs++
		case "reply":
			replies++
		}
	}
	if runs != 1 || replies != 7 || actives != 7 {
		t.Errorf("run jobs %d, busy replies %d, told active %d; want 1, 7, 7", runs, replies, actives)
	}
	// Another issue is not blocked; a redelivery is a duplicate.
	if _, _, active, _ := db.RecordRunDelivery(ctx, store.Delivery{ID: "other"}, runJob("o/r", 6), nil); active != nil {
		t.Errorf("issue 6 blocked by issue 5")
	}
	if _, dup, active, _ := db.RecordRunDelivery(ctx, store.Delivery{ID: "d0"}, runJob("o/r", 5), nil); !dup || active != nil {
		t.Errorf("redelivery: dup=%v active=%v", dup, active)
	}
}

func TestRequestCancel(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	if _, err := db.RequestCancel(ctx, "o/r", 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no run: err = %v", err)
	}
	// A queued run is cancelled at once.
	db.RecordDelivery(ctx, store.Delivery{ID: "a"}, runJob("o/r", 1))
	j, err := db.RequestCancel(ctx, "o/r", 1)
	if err != nil || j.Status != store.JobCancelled {
		t.Fatalf("queued: %+v %v", j, err)
	}
	if c, _ := db.ClaimJob(ctx); c != nil {
		t.Errorf("a cancelled job was claimed")
	}
	// A running one is flagged for its worker.
	db.RecordDelivery(ctx, store.Delivery{ID: "b"}, runJob("o/r", 1))
	claimed, _ := db.ClaimJob(ctx)
	if req, _ := db.CancelRequested(ctx, claimed.ID); req {
		t.Errorf("cancel requested before anyone asked")
	}
	j, err = db.RequestCancel(ctx, "o/r", 1)
	if err != nil || j.ID != claimed.ID || j.Status != store.JobRunning {
		t.Fatalf("running: %+v %v", j, err)
	}
	if req, err := db.CancelRequested(ctx, claimed.ID); !req || err != nil {
		t.Errorf("CancelRequested = %v, %v", req, err)
	}
	if err := db.FinishJob(ctx, claimed.ID, store.JobCancelled, "cancelled by @x"); err != nil {
		t.Errorf("finish as cancelled: %v", err)
	}
	if _, err := db.ActiveJob(ctx, "o/r", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the lock was not released: %v", err)
	}
}

func TestRunForPRAndOutcome(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	if _, err := db.RunForPR(ctx, "o/r", 9); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
	first := &store.Run{Repo: "o/r", Issue: 3}
	db.CreateRun(ctx, first)
	first.PRNumber = 9
	db.UpdateRun(ctx, first)
	second := &store.Run{Repo: "o/r", Issue: 3}
	db.CreateRun(ctx, second)
	second.PRNumber = 9
	db.UpdateRun(ctx, second)
	got, err := db.RunForPR(ctx, "o/r", 9)
	if err != nil || got.ID != second.ID {
		t.Fatalf("RunForPR = %+v, %v; want run %d", got, err, second.ID)
	}
	if n, err := db.RecordPROutcome(ctx, "o/r", 9, "merged"); n != 2 || err != nil {
		t.Errorf("RecordPROutcome = %d, %v", n, err)
	}
	if o, _ := db.PROutcome(ctx, first.ID); o != "merged" {
		t.Errorf("outcome = %q", o)
	}
}

func TestRecordInstallationDropsQueuedJobs(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	if _, known, _ := db.InstallationActive(ctx, 1); known {
		t.Fatal("unknown installation reported known")
	}
	db.RecordInstallation(ctx, 1, "octo-org", true)
	db.RecordDelivery(ctx, store.Delivery{ID: "a", InstallationID: 1}, runJob("o/r", 1))
	db.RecordDelivery(ctx, store.Delivery{ID: "b", InstallationID: 2}, &store.Job{Kind: store.JobKindRun, InstallationID: 2, Repo: "p/q", Issue: 1})
	dropped, err := db.RecordInstallation(ctx, 1, "octo-org", false)
	if err != nil || dropped != 1 {
		t.Fatalf("dropped = %d, %v", dropped, err)
	}
	if active, known, _ := db.InstallationActive(ctx, 1); active || !known {
		t.Errorf("active=%v known=%v", active, known)
	}
	j, _ := db.ClaimJob(ctx)
	if j == nil || j.InstallationID != 2 {
		t.Errorf("claimed %+v, want installation 2's job only", j)
	}
}
