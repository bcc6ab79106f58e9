package handlers

import (
	"strings"
	"testing"

	"github.com/bestofn/bestofn/explore"
)

func TestStatusLinksRunPageOnlyWhenOver(t *testing.T) {
	const url = "https://bot.example/runs/3?key=k"
	for phase, want := range map[string]bool{"preparing": false, "attempting": false, "publishing": false, "done": true, "failed": true} {
		v := statusView{Phase: phase}
		if phase == "done" {
			v.Result = &explore.Result{}
		}
		if got := strings.Contains(renderStatus(3, url, v), url); got != want {
			t.Errorf("phase %s: link shown = %v, want %v", phase, got, want)
		}
	}
}

func TestScorecardStaysUnderLimit(t *testing.T) {
	huge := []byte(strings.Repeat("x", 200_000))
	res := &explore.Result{Winner: 1, Decided: "the only passing attempt", BaseCommit: strings.Repeat("a", 40)}
	for k := 1; k <= explore.MaxAttempts; k++ {
		o := explore.Outcome{Kind: explore.OutcomeTestsFailed, Text: "tests failed (1 of 2)"}
		if k == 1 {
			o = explore.Outcome{Kind: explore.OutcomePass, Text: "pass"}
		}
		res.Attempts = append(res.Attempts, &explore.Attempt{Number: k, Hint: "h | with a pipe\nand a newline", Outcome: o,
			Patch:   explore.Patch{Diff: huge, Changes: []explore.Change{{Status: "M", Path: "a.go", Added: 1}}},
			TestLog: huge, AgentLog: huge})
	}
	card := renderScorecard(3, "", runRequest{Issue: 9}, explore.Config{Test: "go test ./..."}, res)
	if len(card) > MaxCommentBytes {
		t.Errorf("scorecard is %d bytes, limit %d", len(card), MaxCommentBytes)
	}
	if !strings.Contains(card, "| 1 🏆 | h \\| with a pipe and a newline |") {
		t.Errorf("table cells are not escaped:\n%s", card[:600])
	}
	if !strings.Contains(card, "Attempt 1: patch") || !strings.Contains(card, "bytes cut from the front") {
		t.Errorf("the winner's patch is not shown first, cut from the front")
	}
	withHidden := renderScorecard(3, "", runRequest{Issue: 9}, explore.Config{Test: "t", HiddenTests: ".bestofn/hidden"}, res)
	if strings.Contains(withHidden, "test log") {
		t.Errorf("test logs are shown although hidden tests are configured")
	}
}

func TestPRBodyStatesTheScoreChange(t *testing.T) {
	win := &explore.Attempt{Number: 2, Hint: "h", Axis: "fast", Outcome: explore.Outcome{Kind: explore.OutcomePass, Text: "pass"},
		Score: &explore.Measure{Median: 0.41, Spread: 0.02, Runs: []float64{0.4, 0.41, 0.42}}}
	res := &explore.Result{Winner: 2, Decided: "score", Attempts: []*explore.Attempt{win},
		BaseScore: &explore.Measure{Median: 1.84, Runs: []float64{1.84}}}
	cfg := explore.Config{Test: "t", Score: &explore.ScoreSpec{Command: "python3 bench.py", Better: "lower"}, ScoreRuns: 3}
	body := renderPRBody(1, runRequest{Issue: 4}, cfg, res)
	if !strings.Contains(body, "1.84 → 0.41 (4.5× better)") || !strings.Contains(body, "**fast**") {
		t.Errorf("PR body:\n%s", body)
	}
	card := renderScorecard(1, "", runRequest{Issue: 4}, cfg, res)
	if !strings.Contains(card, "score 0.41 ±0.02") || !strings.Contains(card, "the base scores 1.84") || !strings.Contains(card, "| 2 🏆 | **fast** · h |") {
		t.Errorf("scorecard:\n%s", card)
	}
}
