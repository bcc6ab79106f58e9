package explore

import (
	"fmt"
	"strings"
)

// OutcomeKind is the machine name of an attempt's outcome. Each attempt gets
// exactly one (design doc, "Grading").
type OutcomeKind string

// The outcomes of the design doc, in the order the grader checks them.
const (
	OutcomePass              OutcomeKind = "pass"
	OutcomeTestsFailed       OutcomeKind = "tests_failed"
	OutcomeEditedTests       OutcomeKind = "edited_tests"
	OutcomeChangedTestConfig OutcomeKind = "changed_test_config"
	OutcomeTouchedProtected  OutcomeKind = "touched_protected"
	OutcomeNoChange          OutcomeKind = "no_change"
	OutcomePatchTooLarge     OutcomeKind = "patch_too_large"
	OutcomeAgentFailed       OutcomeKind = "agent_failed"
	OutcomeAgentTimedOut     OutcomeKind = "agent_timed_out"
	OutcomeTestTimedOut      OutcomeKind = "test_timed_out"
	OutcomeSandboxError      OutcomeKind = "sandbox_error"
	OutcomeCancelled         OutcomeKind = "cancelled"
	OutcomeSkippedBudget     OutcomeKind = "skipped_budget"
)

// Outcome is an attempt's grade: its kind and the text the scorecard shows,
// e.g. "tests failed (1 of 6)" or "edited tests (tests/test_stats.py)".
type Outcome struct {
	Kind OutcomeKind `json:"kind"`
	Text string      `json:"text"`
	// Paths are the files involved (edited tests, protected paths).
	Paths []string `json:"paths,omitempty"`
}

// Pass reports whether the outcome is a pass.
func (o Outcome) Pass() bool { return o.Kind == OutcomePass }

func outcome(kind OutcomeKind, detail string, paths ...string) Outcome {
	text := strings.ReplaceAll(string(kind), "_", " ")
	switch kind {
	case OutcomeTouchedProtected:
		text = "touched protected path"
	case OutcomeTestTimedOut:
		text = "test run timed out"
	case OutcomeSkippedBudget:
		text = "skipped (budget)"
	}
	if len(paths) > 0 {
		detail = strings.Join(paths, ", ")
	}
	if detail != "" {
		text += " (" + detail + ")"
	}
	return Outcome{Kind: kind, Text: text, Paths: paths}
}

// classify applies the path rules to a patch, before any test runs: an empty
// patch is "no change"; a modified, deleted, renamed, type- or mode-changed
// file that was a test file at the base is "edited tests"; a change to a
// test configuration file is "changed test config"; a change to any other
// protected path is "touched protected path". New test files are allowed.
// The second result is false when the patch may go on to be graded.
func classify(cfg Config, p Patch) (Outcome, bool) {
	if p.Empty() {
		return outcome(OutcomeNoChange, ""), true
	}
	var edited, testConfig, protected []string
	protectedGlobs := cfg.ProtectedGlobs()
	for _, c := range p.Changes {
		if c.Status != "A" && matchAny(cfg.Tests, c.OldPath) != "" {
			edited = append(edited, c.OldPath)
		}
		for _, pth := range uniq(c.OldPath, c.Path) {
			if matchAny(protectedGlobs, pth) == "" {
				continue
			}
			if matchAny(TestConfigGlobs, pth) != "" {
				testConfig = append(testConfig, pth)
			} else {
				protected = append(protected, pth)
			}
		}
	}
	switch {
	case len(edited) > 0:
		return outcome(OutcomeEditedTests, "", edited...), true
	case len(testConfig) > 0:
		return outcome(OutcomeChangedTestConfig, "", testConfig...), true
	case len(protected) > 0:
		return outcome(OutcomeTouchedProtected, "", protected...), true
	}
	return Outcome{}, false
}

func uniq(a, b string) []string {
	if a == b || a == "" {
		return []string{b}
	}
	return []string{a, b}
}

// testsFailedText names how many tests failed when the runner's summary can
// be read (unittest "Ran N tests" + "FAILED (failures=a, errors=b)", pytest
// "k failed, m passed"), else the exit code.
func testsFailedText(out []byte, exit int) string {
	s := string(out)
	if failed, total, ok := parseUnittest(s); ok {
		return fmt.Sprintf("%d of %d", failed, total)
	}
	if failed, total, ok := parsePytest(s); ok {
		return fmt.Sprintf("%d of %d", failed, total)
	}
	return fmt.Sprintf("exit %d", exit)
}

func parseUnittest(s string) (failed, total int, ok bool) {
	i := strings.LastIndex(s, "\nRan ")
	if i < 0 && strings.HasPrefix(s, "Ran ") {
		i = -1
	} else if i < 0 {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(s[i+1:], "Ran %d test", &total); err != nil {
		return 0, 0, false
	}
	j := strings.LastIndex(s, "FAILED (")
	if j < 0 {
		return 0, total, true
	}
	rest := s[j+len("FAILED ("):]
	if k := strings.Index(rest, ")"); k >= 0 {
		rest = rest[:k]
	}
	for _, part := range strings.Split(rest, ",") {
		kv := strings.SplitN(strings.TrimSpace(part), "=", 2)
		if len(kv) != 2 {
			continue
		}
		var n int
		fmt.Sscanf(kv[1], "%d", &n)
		if kv[0] == "failures" || kv[0] == "errors" || kv[0] == "unexpected successes" {
			failed += n
		}
	}
	return failed, total, true
}

func parsePytest(s string) (failed, total int, ok bool) {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.Trim(lines[i], "= ")
		if !strings.Contains(line, " failed") && !strings.Contains(line, " passed") && !strings.Contains(line, " error") {
			continue
		}
		if k := strings.Index(line, " in "); k >= 0 {
			line = line[:k]
		}
		found := false
		for _, part := range strings.Split(line, ",") {
			var n int
			var word string
			if _, err := fmt.Sscanf(strings.TrimSpace(part), "%d %s", &n, &word); err != nil {
				continue
			}
			found = true
			switch strings.TrimSuffix(word, "s") {
			case "failed", "error":
				failed += n
				total += n
			case "passed":
				total += n
			}
		}
		if found {
			return failed, total, true
		}
	}
	return 0, 0, false
}

// classify is the package-level classify plus the rules that need the run:
// a change to the test command's own entry points (the Makefile when it runs
// make, the scripts package.json runs, a script file it names) is "changed
// test config", and a change to a folder that holds hidden tests (made a file
// or a symlink) is "touched protected path".
func (r *runState) classify(p Patch) (Outcome, bool) {
	if o, done := classify(r.task.Config, p); done {
		return o, true
	}
	if paths := entryPointChanges(r.task.Config.Test, r.baseDir, p); len(paths) > 0 {
		return outcome(OutcomeChangedTestConfig, "", paths...), true
	}
	var hidden []string
	for _, c := range p.Changes {
		for _, pth := range uniq(c.OldPath, c.Path) {
			for _, h := range r.hiddenPaths {
				if strings.HasPrefix(h, pth+"/") {
					hidden = append(hidden, pth)
					break
				}
			}
		}
	}
	if len(hidden) > 0 {
		return outcome(OutcomeTouchedProtected, "", hidden...), true
	}
	return Outcome{}, false
}
