package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bestofn/bestofn/store"
)

// TestStats fills a store with three runs and checks the numbers `bot
// stats` prints: per hint and per axis, ran/passed/won/cost, and the cost
// per solved issue over merged pull requests only.
func TestStats(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(dir, "bestofn.db"))
	if err != nil {
		t.Fatal(err)
	}
	type att struct {
		hint, axis, kind string
		cost             int64
	}
	for i, run := range []struct {
		winner int
		pr     int
		merged bool
		atts   []att
	}{
		{winner: 1, pr: 10, merged: true, atts: []att{{"small", `opus`, "pass", 300000}, {"test first", `sonnet`, "tests_failed", 100000}}},
		{winner: 2, pr: 11, merged: false, atts: []att{{"small", `opus`, "pass", 200000}, {"test first", `sonnet`, "pass", 100000}}},
		{winner: 0, atts: []att{{"small", `opus`, "edited_tests", 100000}, {"", `sonnet`, "no_change", 200000}}},
	} {
		r := &store.Run{Repo: "o/r", Issue: i + 1}
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		r.Winner, r.PRNumber, r.Status = run.winner, run.pr, store.RunDone
		db.UpdateRun(ctx, r)
		for k, a := range run.atts {
			db.SaveAttempt(ctx, &store.Attempt{RunID: r.ID, Number: k + 1, Hint: a.hint, OutcomeKind: a.kind, CostMicros: a.cost,
				Detail: `{"axis":"` + a.axis + `","agent":"` + a.axis + `-agent","budget":"10m0s"}`})
		}
		if run.pr != 0 {
			outcome := "closed"
			if run.merged {
				outcome = "merged"
			}
			db.RecordPROutcome(ctx, "o/r", run.pr, outcome)
		}
	}
	db.Close()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"stats"}, envOf(map[string]string{"DATA_DIR": dir}), &out, &errb); code != 0 {
		t.Fatalf("stats = %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"3 runs, 6 attempts, 1 merged pull requests, total cost $1.0000",
		"cost per solved issue: $1.0000",
		"small       3    2       1    $0.6000",
		"test first  2    1       1    $0.2000",
		"(no hint)   1    0       0    $0.2000",
		"opus    3    2       1    $0.6000",
		"sonnet  3    1       1    $0.4000",
		"opus-agent    3    2       1    $0.6000",
		"by budget:\nchoice  ran  passed  won  cost\n10m0s   6    3       2    $1.0000",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("stats output lacks %q:\n%s", want, got)
		}
	}
	if code := run(ctx, []string{"stats"}, envOf(nil), &out, &errb); code != 1 {
		t.Errorf("stats without DATA_DIR = %d", code)
	}
}
