package explore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bestofn/bestofn/explore"
)

func TestParseAttemptsList(t *testing.T) {
	cfg, err := explore.ParseConfig([]byte(`
agent: ./default-agent.sh
agent_timeout: 5m
attempts:
  - {hint: "Be brief.", label: quick}
  - {agent: claude-code, budget: 10m, turns: 30}
  - {}
stop_early: true
budget_usd: 2.5
parallel: 2
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Attempts != 3 || !cfg.StopEarly || cfg.BudgetUSD != 2.5 || cfg.Parallel != 2 {
		t.Fatalf("cfg = %+v", cfg)
	}
	if cfg.Hint(1) != "Be brief." || cfg.Hint(3) != explore.DefaultHints[2] {
		t.Errorf("hints = %q, %q", cfg.Hint(1), cfg.Hint(3))
	}
	if a, d := cfg.AgentFor(1); a != "./default-agent.sh" || d != 5*time.Minute {
		t.Errorf("attempt 1 agent = %q %s", a, d)
	}
	if a, d := cfg.AgentFor(2); !strings.Contains(a, "claude -p") || !strings.Contains(a, "not found; add it to setup") || d != 10*time.Minute {
		t.Errorf("attempt 2 agent = %q %s", a, d)
	}
	if !strings.Contains(explore.AgentPresets["claude-code"], `--max-turns "$BESTOFN_MAX_TURNS"`) || cfg.Turns(2) != 30 {
		t.Errorf("turns: preset %q, attempt 2 %d", explore.AgentPresets["claude-code"], cfg.Turns(2))
	}
	if cfg.Axis(1) != "quick" || cfg.Axis(2) != "claude-code, 10m0s, 30 turns" || cfg.Axis(3) != "" {
		t.Errorf("axes = %q %q %q", cfg.Axis(1), cfg.Axis(2), cfg.Axis(3))
	}
	for name, bad := range map[string]string{
		"UnknownKey":   "attempts: [{hint: a, model: b}]",
		"NotAMapping":  "attempts: [a, b]",
		"TooMany":      "attempts: [" + strings.Repeat("{}, ", explore.MaxAttempts) + "{}]",
		"BadBudget":    "attempts: [{budget: soon}]",
		"NegativeCost": "budget_usd: -1",
		"Parallel":     "parallel: 0",
	} {
		if _, err := explore.ParseConfig([]byte(bad), nil); err == nil {
			t.Errorf("%s: no error for %q", name, bad)
		}
	}
}

// strategyTask is the engine test repository with a plan of scripted agents.
func strategyTask(t *testing.T, plan string) explore.Task {
	tk := task(t, 1)
	cfg, err := explore.ParseConfig([]byte(plan), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk.Config.Attempts, tk.Config.Plan = cfg.Attempts, cfg.Plan
	tk.Config.StopEarly, tk.Config.BudgetUSD, tk.Config.Parallel = cfg.StopEarly, cfg.BudgetUSD, cfg.Parallel
	return tk
}

const fix = `echo 'add() { echo $(( $1 + $2 )); }' > calc.sh`

func TestStopEarly(t *testing.T) {
	e, data := newEngine(t)
	tk := strategyTask(t, `
attempts:
  - {agent: "`+fix+`", label: fast}
  - {agent: "sleep 60", label: slow}
  - {agent: "sleep 60", label: slower}
stop_early: true
`)
	start := time.Now()
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("stop_early run took %s", took)
	}
	want := []explore.OutcomeKind{explore.OutcomePass, explore.OutcomeCancelled, explore.OutcomeCancelled}
	for i, a := range res.Attempts {
		if a.Outcome.Kind != want[i] || a.Axis == "" {
			t.Errorf("attempt %d (%s): %s, want %s", a.Number, a.Axis, a.Outcome.Text, want[i])
		}
	}
	assertClean(t, data)
}

// TestBudgetSkipsLaterAttempts: attempts run one at a time; the first
// reports that its model calls cost $0.50, over the $0.40 budget, so the
// rest are skipped.
func TestBudgetSkipsLaterAttempts(t *testing.T) {
	e, _ := newEngine(t)
	tk := strategyTask(t, `
attempts:
  - {agent: "echo '{\"type\":\"result\",\"total_cost_usd\":0.5}'"}
  - {agent: "`+fix+`"}
  - {agent: "`+fix+`"}
budget_usd: 0.4
parallel: 1
`)
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Attempts[0]; a.ModelCostMicros != 500000 || a.Outcome.Kind != explore.OutcomeNoChange {
		t.Errorf("attempt 1: %s, model cost %d µ$", a.Outcome.Text, a.ModelCostMicros)
	}
	for _, a := range res.Attempts[1:] {
		if a.Outcome.Kind != explore.OutcomeSkippedBudget || a.Outcome.Text != "skipped (budget)" {
			t.Errorf("attempt %d: %s, want skipped (budget)", a.Number, a.Outcome.Text)
		}
	}
}

func TestPresetWithoutItsProgram(t *testing.T) {
	e, _ := newEngine(t)
	tk := strategyTask(t, `attempts: [{agent: codex}, {agent: "`+fix+`"}]`)
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Attempts[0].Outcome.Text; got != "agent failed (codex: not found; add it to setup)" {
		t.Errorf("attempt 1 = %q", got)
	}
	if res.Winner != 2 {
		t.Errorf("winner = %d; a missing agent must fail its attempt, not the run", res.Winner)
	}
}

// TestScoreSelectsTheFastest: three correct attempts of different speed and
// a wrong one that is fastest of all; the fastest correct one wins on score,
// measured against the base.
func TestScoreSelectsTheFastest(t *testing.T) {
	e, _ := newEngine(t)
	slow := func(s string) string {
		return `printf '%s\n' 'add() { sleep ` + s + `; echo $(( $1 + $2 )); }' > calc.sh`
	}
	tk := strategyTask(t, `
attempts:
  - {agent: "`+slow("0.3")+`", label: slow}
  - {agent: "`+slow("0.02")+`", label: fastest-correct}
  - {agent: "`+slow("0.15")+`", label: medium}
  - {agent: "printf '%s\n' 'add() { echo 4; }' > calc.sh", label: wrong-but-fast}
`)
	tk.Config.Score = &explore.ScoreSpec{Command: `s=$(date +%s%N); . ./calc.sh; add 1 2 >/dev/null; echo $(( ($(date +%s%N) - s) / 1000000 ))`, Better: "lower"}
	tk.Config.ScoreRuns = 3
	tk.Config.Select, tk.Config.SelectChain = explore.SelectScore, []string{explore.SelectScore, explore.SelectSmallestPatch}
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Winner != 2 || !strings.HasPrefix(res.Decided, "score (") {
		t.Fatalf("winner %d decided by %q", res.Winner, res.Decided)
	}
	if a := res.Attempts[3]; a.Outcome.Kind != explore.OutcomeTestsFailed || a.Score != nil {
		t.Errorf("the wrong attempt: %s, score %v", a.Outcome.Text, a.Score)
	}
	for _, a := range res.Attempts[:3] {
		if a.Score == nil || a.Score.Err != "" || len(a.Score.Runs) != 3 {
			t.Errorf("attempt %d score = %+v", a.Number, a.Score)
		}
	}
	if res.Attempts[0].Score.Median <= res.Attempts[1].Score.Median {
		t.Errorf("slow %v <= fastest %v", res.Attempts[0].Score, res.Attempts[1].Score)
	}
	if res.BaseScore == nil || res.BaseScore.Err != "" {
		t.Errorf("base score = %+v", res.BaseScore)
	}
}

func TestAgentReportsCostOrTokens(t *testing.T) {
	e, _ := newEngine(t)
	tk := strategyTask(t, `
attempts:
  - {agent: "echo 'Tokens: 12k sent, 1.2k received. Cost: $0.01 message, $0.12 session.'", label: aider}
  - {agent: "echo 'tokens used: 12,345'", label: codex}
`)
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Attempts[0]; a.ModelCostMicros != 120000 {
		t.Errorf("aider's session cost = %d µ$", a.ModelCostMicros)
	}
	if a := res.Attempts[1]; a.ModelTokens != 12345 || a.ModelCostMicros != 0 {
		t.Errorf("codex: tokens %d, cost %d", a.ModelTokens, a.ModelCostMicros)
	}
}

// TestTurnsReachTheAgent: an attempt's turn limit is in its environment.
func TestTurnsReachTheAgent(t *testing.T) {
	e, _ := newEngine(t)
	tk := strategyTask(t, `attempts: [{agent: "echo $BESTOFN_MAX_TURNS > turns.txt", turns: 7}, {agent: "echo ${BESTOFN_MAX_TURNS:-none} > turns.txt"}]`)
	res, err := e.Run(context.Background(), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := string(res.Attempts[0].Patch.Diff); !strings.Contains(d, "+7") {
		t.Errorf("attempt 1 patch:\n%s", d)
	}
	if d := string(res.Attempts[1].Patch.Diff); !strings.Contains(d, "+none") {
		t.Errorf("attempt 2 patch:\n%s", d)
	}
}
