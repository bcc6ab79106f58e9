package explore

import (
	"reflect"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	cfg := Defaults(nil)
	cfg.Tests = []string{"tests/**"}
	cfg.HiddenTests = ".bestofn/hidden"
	tests := map[string]struct {
		changes []Change
		kind    OutcomeKind
		paths   []string
		graded  bool
	}{
		"Empty":               {kind: OutcomeNoChange},
		"CodeOnly":            {changes: []Change{{Status: "M", Path: "stats.py", OldPath: "stats.py"}}, graded: true},
		"NewTestWelcome":      {changes: []Change{{Status: "A", Path: "tests/test_new.py", OldPath: "tests/test_new.py"}}, graded: true},
		"ModifiedTest":        {changes: []Change{{Status: "M", Path: "tests/test_a.py", OldPath: "tests/test_a.py"}}, kind: OutcomeEditedTests, paths: []string{"tests/test_a.py"}},
		"DeletedTest":         {changes: []Change{{Status: "D", Path: "tests/test_a.py", OldPath: "tests/test_a.py"}}, kind: OutcomeEditedTests, paths: []string{"tests/test_a.py"}},
		"RenamedTestAway":     {changes: []Change{{Status: "R", Path: "old/test_a.py", OldPath: "tests/test_a.py"}}, kind: OutcomeEditedTests, paths: []string{"tests/test_a.py"}},
		"TypeChangedTest":     {changes: []Change{{Status: "T", Path: "tests/test_a.py", OldPath: "tests/test_a.py"}}, kind: OutcomeEditedTests, paths: []string{"tests/test_a.py"}},
		"Conftest":            {changes: []Change{{Status: "A", Path: "conftest.py", OldPath: "conftest.py"}}, kind: OutcomeChangedTestConfig, paths: []string{"conftest.py"}},
		"NestedConftest":      {changes: []Change{{Status: "A", Path: "src/conftest.py", OldPath: "src/conftest.py"}}, kind: OutcomeChangedTestConfig, paths: []string{"src/conftest.py"}},
		"Workflow":            {changes: []Change{{Status: "M", Path: ".github/workflows/ci.yml", OldPath: ".github/workflows/ci.yml"}}, kind: OutcomeTouchedProtected, paths: []string{".github/workflows/ci.yml"}},
		"HiddenFolder":        {changes: []Change{{Status: "A", Path: ".bestofn/hidden/tests/x.py", OldPath: ".bestofn/hidden/tests/x.py"}}, kind: OutcomeTouchedProtected, paths: []string{".bestofn/hidden/tests/x.py"}},
		"EditedTestsFirst":    {changes: []Change{{Status: "A", Path: "conftest.py", OldPath: "conftest.py"}, {Status: "M", Path: "tests/t.py", OldPath: "tests/t.py"}}, kind: OutcomeEditedTests, paths: []string{"tests/t.py"}},
		"RenameIntoProtected": {changes: []Change{{Status: "R", Path: "pytest.ini", OldPath: "notes.ini"}}, kind: OutcomeChangedTestConfig, paths: []string{"pytest.ini"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, done := classify(cfg, Patch{Changes: tc.changes})
			if done == tc.graded {
				t.Fatalf("done = %v, want graded=%v (outcome %+v)", done, tc.graded, o)
			}
			if tc.graded {
				return
			}
			if o.Kind != tc.kind || !reflect.DeepEqual(o.Paths, tc.paths) {
				t.Errorf("outcome = %+v, want %s %q", o, tc.kind, tc.paths)
			}
		})
	}
}

func TestOutcomeText(t *testing.T) {
	tests := map[string]struct {
		o    Outcome
		want string
	}{
		"EditedTests":  {outcome(OutcomeEditedTests, "", "tests/a.py", "tests/b.py"), "edited tests (tests/a.py, tests/b.py)"},
		"TestConfig":   {outcome(OutcomeChangedTestConfig, "", "conftest.py"), "changed test config (conftest.py)"},
		"Protected":    {outcome(OutcomeTouchedProtected, "", ".github/x"), "touched protected path (.github/x)"},
		"NoChange":     {outcome(OutcomeNoChange, ""), "no change"},
		"AgentFailed":  {outcome(OutcomeAgentFailed, "exit 3"), "agent failed (exit 3)"},
		"AgentTimeout": {outcome(OutcomeAgentTimedOut, ""), "agent timed out"},
		"TestTimeout":  {outcome(OutcomeTestTimedOut, ""), "test run timed out"},
		"TestsFailed":  {outcome(OutcomeTestsFailed, "1 of 6"), "tests failed (1 of 6)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.o.Text != tc.want {
				t.Errorf("text = %q, want %q", tc.o.Text, tc.want)
			}
		})
	}
}

func TestTestsFailedText(t *testing.T) {
	unittest := "test_a (t.T) ... ok\nFAIL: test_b\n----\nRan 6 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n"
	pytest := "...F.E\n=========== 1 failed, 4 passed, 1 error in 0.12s ===========\n"
	tests := map[string]struct {
		out  string
		want string
	}{
		"Unittest": {unittest, "2 of 6"},
		"Pytest":   {pytest, "2 of 6"},
		"Unknown":  {"boom\n", "exit 2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := testsFailedText([]byte(tc.out), 2); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	t0 := time.Unix(1000, 0)
	pass := Outcome{Kind: OutcomePass, Text: "pass"}
	mk := func(n, lines, files int, finish time.Duration, o Outcome) *Attempt {
		var ch []Change
		for i := 0; i < files; i++ {
			ch = append(ch, Change{Status: "M", Path: string(rune('a' + i))})
		}
		if files > 0 {
			ch[0].Added = lines
		}
		return &Attempt{Number: n, Outcome: o, Patch: Patch{Changes: ch}, Finished: t0.Add(finish)}
	}
	fail := Outcome{Kind: OutcomeTestsFailed}
	tests := map[string]struct {
		rule     string
		attempts []*Attempt
		want     int
		decided  string
	}{
		"NonePass":       {attempts: []*Attempt{mk(1, 1, 1, 0, fail)}, want: 0},
		"OnlyOne":        {attempts: []*Attempt{mk(1, 1, 1, 0, fail), mk(2, 9, 1, 0, pass)}, want: 2, decided: "the only passing attempt"},
		"SmallestPatch":  {attempts: []*Attempt{mk(1, 9, 1, 0, pass), mk(2, 3, 2, 5, pass), mk(3, 1, 1, 0, fail)}, want: 2, decided: "smallest patch (3 changed lines against 9 for attempt 1)"},
		"FewestFilesTie": {attempts: []*Attempt{mk(1, 4, 2, 0, pass), mk(2, 4, 1, 5, pass)}, want: 2, decided: "fewest files (1 files against 2 for attempt 1)"},
		"EarliestFinish": {attempts: []*Attempt{mk(1, 4, 1, 9, pass), mk(2, 4, 1, 5, pass)}, want: 2, decided: "earliest finish (ahead of attempt 1)"},
		"LowestNumber":   {attempts: []*Attempt{mk(2, 4, 1, 5, pass), mk(1, 4, 1, 5, pass)}, want: 1, decided: "lowest attempt number (ahead of attempt 2)"},
		"FewestFilesRule": {rule: SelectFewestFiles,
			attempts: []*Attempt{mk(1, 2, 2, 0, pass), mk(2, 9, 1, 0, pass)}, want: 2, decided: "fewest files (1 files against 2 for attempt 1)"},
		"NilAttemptSkipped": {attempts: []*Attempt{nil, mk(2, 1, 1, 0, pass)}, want: 2, decided: "the only passing attempt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, decided := Select([]string{tc.rule}, nil, tc.attempts)
			if got != tc.want || decided != tc.decided {
				t.Errorf("Select = %d %q, want %d %q", got, decided, tc.want, tc.decided)
			}
		})
	}
}
