package explore

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// testOutputLimit caps each stream of a graded test run, in bytes. Reports
// read from stdout (go test -json, unittest -v) need all of it.
const testOutputLimit = 32 << 20

// reportLimit caps a JUnit report file, in bytes.
const reportLimit = 64 << 20

// testRun is one run of the test command and what its report says.
type testRun struct {
	res sandbox.ExecResult
	// report is nil with the exit-code format, or when reportErr is set.
	report    *Report
	reportErr error
}

func (t testRun) log() []byte { return joinLog(t.res) }

// runTests runs the test command in sb without network and reads its report
// in the configured format. A JUnit file is removed before the run, so a
// report the patch planted never counts. The error is for a run that could
// not happen at all.
func runTests(ctx context.Context, sb sandbox.Sandbox, cfg Config) (testRun, error) {
	format, path := cfg.Report()
	if format == ReportJUnit {
		if _, err := sb.Exec(ctx, sandbox.ExecRequest{Argv: []string{"rm", "-rf", "--", path}, Timeout: time.Minute}); err != nil {
			return testRun{}, err
		}
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Shell: cfg.Test, Timeout: cfg.TestTimeout, OutputLimit: testOutputLimit})
	if err != nil {
		return testRun{}, err
	}
	t := testRun{res: res}
	var data []byte
	switch format {
	case ReportExitCode:
		return t, nil
	case ReportJUnit:
		data, err = sb.ReadFile(ctx, path)
		if errors.Is(err, fs.ErrNotExist) {
			t.reportErr = fmt.Errorf("no report at %s", path)
			return t, nil
		}
		if err != nil {
			return testRun{}, err
		}
		if len(data) > reportLimit {
			t.reportErr = fmt.Errorf("report %s is over %d MiB", path, reportLimit>>20)
			return t, nil
		}
	case ReportGoJSON:
		if res.StdoutTruncated {
			t.reportErr = fmt.Errorf("test output over %d MiB; the report is incomplete", testOutputLimit>>20)
			return t, nil
		}
		data = res.Stdout
	case ReportUnittest:
		if res.StdoutTruncated || res.StderrTruncated {
			t.reportErr = fmt.Errorf("test output over %d MiB; the report is incomplete", testOutputLimit>>20)
			return t, nil
		}
		data = append(append([]byte{}, res.Stdout...), res.Stderr...)
	}
	rep, err := ParseReport(format, data)
	if err != nil {
		t.reportErr = fmt.Errorf("unreadable %s report: %v", format, err)
		return t, nil
	}
	t.report = &rep
	return t, nil
}

// Baseline is what the test command reported on the base before any
// attempt: which tests exist, which already fail, which are hidden.
type Baseline struct {
	// Format is the report format ("exit-code" when tests are not named).
	Format string
	// Passing and Failing are the repository's own tests at the base,
	// without hidden tests. Failing ones are named in the status comment:
	// an attempt must make them pass too (one of them may be the bug).
	Passing, Failing []string
	// Hidden are the tests that only the run with hidden tests reported;
	// HiddenPassing those of them that already pass at the base.
	Hidden, HiddenPassing []string
	// Skipped are tests, visible or hidden, that skipped themselves on the
	// base (a platform check): in an attempt they may skip again.
	Skipped []string
	// ExitCode is the exit code of the run without hidden tests.
	ExitCode int
	// Log is the tail of the run with hidden tests (or the only run).
	Log []byte
}

// BaselineError says the test suite cannot run on the base, so no attempt
// could be graded; the run stops before any agent starts.
type BaselineError struct {
	Reason string
	Log    []byte
}

func (e *BaselineError) Error() string { return "the tests cannot run on the base: " + e.Reason }

// runBaseline runs the test command on pristine copies of the base: once as the
// repository has it and, when there are hidden tests, once with them laid
// over. It returns a *BaselineError when the suite cannot run at all (the
// command is not found, times out, or reports no test).
func (r *runState) runBaseline(ctx context.Context, base sandbox.Sandbox) (*Baseline, error) {
	cfg := r.task.Config
	format, _ := cfg.Report()
	b := &Baseline{Format: format}
	run := func(withHidden bool) (testRun, error) {
		copies, err := base.Fork(ctx, 1)
		for _, c := range copies {
			defer stopQuietly(c)
		}
		if err != nil {
			return testRun{}, fmt.Errorf("fork baseline copy: %w", err)
		}
		if withHidden {
			if err := copies[0].PutArchive(ctx, sandbox.Workspace, bytes.NewReader(r.hidden)); err != nil {
				return testRun{}, fmt.Errorf("add hidden tests: %w", err)
			}
		}
		return runTests(ctx, copies[0], cfg)
	}
	plain, err := run(false)
	if err != nil {
		return nil, err
	}
	b.ExitCode, b.Log = plain.res.ExitCode, plain.log()
	switch {
	case plain.res.TimedOut:
		return nil, &BaselineError{Reason: fmt.Sprintf("the test command timed out after %s", cfg.TestTimeout), Log: plain.log()}
	case plain.res.ExitCode == 126 || plain.res.ExitCode == 127:
		return nil, &BaselineError{Reason: fmt.Sprintf("the test command could not be run (exit %d)", plain.res.ExitCode), Log: plain.log()}
	case format != ReportExitCode && plain.report == nil:
		return nil, &BaselineError{Reason: plain.reportErr.Error(), Log: plain.log()}
	case format != ReportExitCode && len(plain.report.Tests) == 0:
		return nil, &BaselineError{Reason: "the test command reported no test", Log: plain.log()}
	}
	known := map[string]bool{}
	if plain.report != nil {
		for _, t := range plain.report.Tests {
			known[t.ID] = true
			switch t.Status {
			case TestFailed:
				b.Failing = append(b.Failing, t.ID)
			case TestPassed:
				b.Passing = append(b.Passing, t.ID)
			case TestSkipped:
				b.Skipped = append(b.Skipped, t.ID)
			}
		}
	}
	if len(r.hidden) == 0 {
		return b, nil
	}
	withHidden, err := run(true)
	if err != nil {
		return nil, err
	}
	b.Log = withHidden.log()
	if withHidden.report == nil {
		return b, nil
	}
	failedAtBase := map[string]bool{}
	for _, t := range withHidden.report.Tests {
		if known[t.ID] {
			continue
		}
		known[t.ID] = true
		b.Hidden = append(b.Hidden, t.ID)
		switch t.Status {
		case TestPassed:
			b.HiddenPassing = append(b.HiddenPassing, t.ID)
		case TestSkipped:
			b.Skipped = append(b.Skipped, t.ID)
		default:
			failedAtBase[t.ID] = true
		}
	}
	// A hidden file that could not load or build on the base is reported
	// under its module or package name: its tests, read from its source,
	// are required by name too, so an attempt cannot keep some of them from
	// running.
	for _, c := range staticHiddenTests(format, r.hidden, r.baseDir) {
		loadFailed := false
		for _, n := range c.names {
			loadFailed = loadFailed || failedAtBase[n]
		}
		if !loadFailed {
			continue
		}
		for _, id := range c.ids {
			if !known[id] {
				known[id] = true
				b.Hidden = append(b.Hidden, id)
			}
		}
	}
	return b, nil
}

// verdict is the grade of one test run against the baseline.
type verdict struct {
	pass bool
	// failed are tests that failed and did not fail at the base; missing
	// are tests that must pass but were not reported as passed.
	failed, missing []string
	total           int
	// hidden are the hidden tests' IDs: the scorecard counts them instead
	// of naming them, so GitHub never shows what the hidden tests are.
	hidden map[string]bool
	// reason explains a fail that names no test (exit code, no report).
	reason string
}

// judge grades a test run. With the exit-code format, exit 0 passes. With
// a report, every test the base has (passing or already failing: a failing
// one may be the very bug) and every hidden test must be reported as passed
// (a skip fails, unless the test skipped itself on the base too; an absence
// fails), no test may fail, and the command must exit 0.
func judge(b *Baseline, t testRun) verdict {
	if b.Format == ReportExitCode {
		if t.res.ExitCode == 0 {
			return verdict{pass: true}
		}
		return verdict{reason: testsFailedText(t.log(), t.res.ExitCode)}
	}
	if t.report == nil {
		return verdict{reason: t.reportErr.Error()}
	}
	v := verdict{hidden: map[string]bool{}}
	for _, id := range b.Hidden {
		v.hidden[id] = true
	}
	seen := map[string]bool{}
	status := make(map[string]TestStatus, len(t.report.Tests))
	for _, tr := range t.report.Tests {
		seen[tr.ID] = true
		status[tr.ID] = tr.Status
		if tr.Status == TestFailed {
			v.failed = append(v.failed, tr.ID)
		}
	}
	mayskip := map[string]bool{}
	for _, id := range b.Skipped {
		mayskip[id] = true
	}
	required := append(append(append([]string{}, b.Passing...), b.Failing...), b.Hidden...)
	for _, id := range required {
		seen[id] = true
		st, ok := status[id]
		switch {
		case ok && st == TestPassed, ok && st == TestFailed:
			// passed, or already counted as failed
		case ok && st == TestSkipped && mayskip[id]:
			// it skipped itself on the base too
		case !ok && parametrizedPass(id, status):
			// pytest reports a parametrized test as test_x[case]; every case
			// that ran is judged on its own above.
		case !ok && covered(id, t.report):
			// A test that could not even load at the base (an import or
			// build failure reported under its module or package) now runs
			// under its real names.
		default:
			v.missing = append(v.missing, id)
		}
	}
	v.total = len(seen)
	switch {
	case len(v.failed) > 0 || len(v.missing) > 0:
	case t.res.ExitCode != 0:
		v.reason = fmt.Sprintf("every test passed but the test command exited %d", t.res.ExitCode)
	default:
		v.pass = true
	}
	return v
}

// parametrizedPass reports whether some test named id+"[...]" passed.
func parametrizedPass(id string, status map[string]TestStatus) bool {
	for k, st := range status {
		if st == TestPassed && strings.HasPrefix(k, id+"[") {
			return true
		}
	}
	return false
}

// covered reports whether id, a test reported at the base that the run does
// not name, is a module or package under which the run reports passing tests
// ("pkg" for "pkg.TestX", "tests.test_hidden" for
// "tests.test_hidden.Case.test_x", unittest's
// "unittest.loader._FailedTest.test_hidden" for "...test_hidden.Case.test_x").
func covered(id string, rep *Report) bool {
	mod := id
	if m, ok := strings.CutPrefix(id, "unittest.loader._FailedTest."); ok {
		mod = m
	}
	for _, tr := range rep.Tests {
		if tr.Status != TestPassed || tr.ID == id {
			continue
		}
		for _, sep := range []string{".", "::", "/"} {
			if strings.HasPrefix(tr.ID, mod+sep) || strings.Contains(tr.ID, "."+mod+sep) {
				return true
			}
		}
	}
	return false
}

// text is the verdict as the scorecard shows it: "2 of 6: a, b; missing: c".
func (v verdict) text() string {
	if v.reason != "" {
		return v.reason
	}
	var parts []string
	if len(v.failed) > 0 {
		parts = append(parts, "failed: "+v.names(v.failed))
	}
	if len(v.missing) > 0 {
		parts = append(parts, "not run or skipped: "+v.names(v.missing))
	}
	return fmt.Sprintf("%d of %d; %s", len(v.failed)+len(v.missing), v.total, strings.Join(parts, "; "))
}

// names lists visible tests by name and hidden ones by count.
func (v verdict) names(ids []string) string {
	var shown []string
	hidden := 0
	for _, id := range ids {
		if v.hidden[id] {
			hidden++
		} else {
			shown = append(shown, id)
		}
	}
	switch {
	case hidden == 0:
		return names(shown)
	case len(shown) == 0:
		return plural(hidden, "hidden test")
	}
	return names(shown) + " and " + plural(hidden, "hidden test")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func names(ids []string) string {
	const show = 3
	if len(ids) <= show {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:show], ", "), len(ids)-show)
}

// grade applies the attempt's code patch (its added tests left out) to a
// fresh fork of the base, lays the hidden tests over it, runs the test
// command without network and judges the run against the baseline. A
// failing run is run again up to test_retries times; tests that pass only on
// a retry are reported as flaky. When the attempt added tests, they are run
// too, in another fresh copy with the whole patch, and counted apart: they
// never change the grade.
func (r *runState) grade(ctx context.Context, base sandbox.Sandbox, a *Attempt) error {
	cfg := r.task.Config
	g, stop, err := r.gradingCopy(ctx, base, a.Patch.CodeDiff)
	if err != nil {
		return err
	}
	defer stop()
	t, err := runTests(ctx, g, cfg)
	if err != nil {
		return fmt.Errorf("run tests: %w", err)
	}
	a.TestLog = t.log()
	if t.res.TimedOut {
		a.Outcome = outcome(OutcomeTestTimedOut, "")
		return nil
	}
	v := judge(r.baseline, t)
	for retry := 0; !v.pass && retry < cfg.TestRetries; retry++ {
		again, err := runTests(ctx, g, cfg)
		if err != nil {
			return fmt.Errorf("run tests again: %w", err)
		}
		if again.res.TimedOut {
			break
		}
		if v2 := judge(r.baseline, again); v2.pass {
			a.Flaky = append(append([]string{}, v.failed...), v.missing...)
			flaky := v.names(a.Flaky)
			if len(a.Flaky) == 0 {
				flaky = "the test command"
			}
			v, a.TestLog = v2, again.log()
			a.Outcome = Outcome{Kind: OutcomePass, Text: "pass (flaky: " + flaky + ")"}
		}
	}
	if v.pass {
		if a.Outcome.Kind != OutcomePass {
			a.Outcome = Outcome{Kind: OutcomePass, Text: "pass"}
		}
	} else {
		a.Outcome = outcome(OutcomeTestsFailed, v.text())
	}
	if a.Outcome.Pass() {
		// Rules that rank passing attempts measure them in this same
		// pristine copy.
		if cfg.Score != nil {
			if a.Score, err = measure(ctx, g, cfg); err != nil {
				return fmt.Errorf("score: %w", err)
			}
		}
		if strings.TrimSpace(cfg.Lint) != "" {
			res, err := g.Exec(ctx, sandbox.ExecRequest{Shell: cfg.Lint, Timeout: cfg.TestTimeout})
			if err != nil {
				return fmt.Errorf("lint: %w", err)
			}
			clean := !res.TimedOut && res.ExitCode == 0
			a.LintClean = &clean
		}
	}
	if len(a.Patch.AddedTests) > 0 {
		a.AddedTests = r.runAddedTests(ctx, base, a.Patch, t)
	}
	return nil
}

// gradingCopy forks the base, applies diff and lays the hidden tests over
// it; stop ends the copy.
func (r *runState) gradingCopy(ctx context.Context, base sandbox.Sandbox, diff []byte) (sandbox.Sandbox, func(), error) {
	copies, err := base.Fork(ctx, 1)
	stop := func() {
		for _, c := range copies {
			stopQuietly(c)
		}
	}
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("fork grading copy: %w", err)
	}
	g := copies[0]
	if len(diff) > 0 {
		if err := g.WriteFile(ctx, PatchPath, diff, 0o644); err != nil {
			stop()
			return nil, nil, err
		}
		apply, err := g.Exec(ctx, sandbox.ExecRequest{Argv: []string{"git", "apply", "--binary", "--whitespace=nowarn", PatchPath}, Timeout: 5 * time.Minute})
		if err != nil {
			stop()
			return nil, nil, err
		}
		if apply.ExitCode != 0 {
			stop()
			return nil, nil, fmt.Errorf("patch does not apply to the base: %s", strings.TrimSpace(string(apply.Stderr)))
		}
	}
	if len(r.hidden) > 0 {
		if err := g.PutArchive(ctx, sandbox.Workspace, bytes.NewReader(r.hidden)); err != nil {
			stop()
			return nil, nil, fmt.Errorf("add hidden tests: %w", err)
		}
	}
	return g, stop, nil
}

// runAddedTests runs the whole patch, added tests included, and says how the
// tests the attempt added fared, e.g. "added 3 tests, 3 pass". It never
// changes the grade; a problem running them is reported in the text.
func (r *runState) runAddedTests(ctx context.Context, base sandbox.Sandbox, p Patch, graded testRun) string {
	g, stop, err := r.gradingCopy(ctx, base, p.Diff)
	if err != nil {
		return "added tests could not run: " + err.Error()
	}
	defer stop()
	t, err := runTests(ctx, g, r.task.Config)
	switch {
	case err != nil:
		return "added tests could not run: " + err.Error()
	case t.res.TimedOut:
		return fmt.Sprintf("added %d test files; the run with them timed out", len(p.AddedTests))
	case t.report == nil:
		verdict := "pass"
		if t.res.ExitCode != 0 {
			verdict = fmt.Sprintf("fail (exit %d)", t.res.ExitCode)
		}
		return fmt.Sprintf("added %d test files; the suite with them: %s", len(p.AddedTests), verdict)
	}
	known := map[string]bool{}
	if graded.report != nil {
		for _, tr := range graded.report.Tests {
			known[tr.ID] = true
		}
	}
	var added, passed int
	var failing []string
	for _, tr := range t.report.Tests {
		if known[tr.ID] {
			continue
		}
		added++
		if tr.Status == TestPassed {
			passed++
		} else {
			failing = append(failing, tr.ID)
		}
	}
	sort.Strings(failing)
	s := fmt.Sprintf("added %d tests, %d pass", added, passed)
	if len(failing) > 0 {
		s += " (not passing: " + names(failing) + ")"
	}
	return s
}

// listHidden fills hiddenPaths from the hidden tests' tar.
func (r *runState) listHidden() error {
	tr := tar.NewReader(bytes.NewReader(r.hidden))
	for len(r.hidden) > 0 {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read hidden tests: %w", err)
		}
		if h.Typeflag != tar.TypeDir {
			r.hiddenPaths = append(r.hiddenPaths, strings.TrimPrefix(h.Name, "./"))
		}
	}
	return nil
}
