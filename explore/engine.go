// Package explore is the engine: it prepares a base sandbox from a
// repository tree, forks it into copies, runs one attempt per copy, grades
// every attempt in a pristine copy of the base and selects the winner. It
// knows nothing of HTTP or GitHub: a Task goes in, a Result comes out.
package explore

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bestofn/bestofn/sandbox"
)

// Paths inside every sandbox that the engine uses.
const (
	PromptPath   = sandbox.Scratch + "/prompt.md"
	PatchPath    = sandbox.Scratch + "/attempt.patch"
	AgentDirPath = sandbox.Scratch + "/agent"
)

// logTail is how much of each command's output the engine keeps, in bytes.
const logTail = 64 << 10

// Issue is the issue an attempt works on, as the prompt shows it.
type Issue struct {
	Number   int
	Title    string
	Body     string
	Comments []IssueComment
}

// IssueComment is one comment by a person on the issue.
type IssueComment struct {
	Author string
	Body   string
}

// Task is one best-of-N run's input.
type Task struct {
	// Repo names the repository ("owner/name"); it appears in the prompt and labels.
	Repo string
	// RepoDir is a git repository on the bot's side that has BaseCommit.
	RepoDir string
	// BaseCommit is the commit every attempt starts from.
	BaseCommit string
	Issue      Issue
	Config     Config
	// AgentFiles, when set, are copied to AgentDirPath in every attempt copy
	// (never into grading copies): helper scripts of an agent preset.
	AgentFiles fs.FS
	// AgentEnv is added to the agent step's environment only (model keys);
	// setup and grading never see it.
	AgentEnv map[string]string
	// Labels are passed to the sandbox backend (run id and so on).
	Labels map[string]string
	// Revision, when set, is what a reviewer asked to change on the bot's
	// pull request; the prompt carries it (`/bestofn revise`).
	Revision string
	// HiddenDir is a folder on the bot's side holding the hidden tests when
	// they come from a companion repository (Config.HiddenRepo); it mirrors
	// the repository's layout.
	HiddenDir string
}

// Engine runs tasks on one sandbox backend.
type Engine struct {
	// Provider creates the base sandbox.
	Provider sandbox.Provider
	// WorkDir is a folder on the bot's side for each run's base repository
	// and patches; each run uses a fresh subfolder and removes it at the end.
	WorkDir string
	// Log receives one line per step; nil means slog.Default().
	Log *slog.Logger
}

// Attempt is one attempt's result.
type Attempt struct {
	Number  int
	Hint    string
	Outcome Outcome
	Patch   Patch
	// AgentExit is the agent command's exit code (-1 when killed).
	AgentExit int
	// AgentLog and TestLog are the tails of the agent's and the graded test
	// run's output (stdout then stderr).
	AgentLog, TestLog []byte
	AgentDuration     time.Duration
	GradeDuration     time.Duration
	// Finished is when the attempt's agent step ended (selection breaks
	// ties on it).
	Finished time.Time
	// Usage is what the attempt's copy consumed.
	Usage sandbox.Usage
	// Flaky names the tests that failed and then passed on a retry.
	Flaky []string
	// AddedTests says how the test files the attempt added fared ("added 3
	// tests, 3 pass"); empty when it added none. They never vote.
	AddedTests string
	// Score is the attempt's measurement by the score command (passing
	// attempts only, when `score` is set); LintClean whether `lint` exited 0.
	Score     *Measure
	LintClean *bool
	// Axis names what this attempt varies when `attempts` is a list (its
	// label, or its agent and budget); "" otherwise. Agent and Budget are
	// the plan's own choices ("" when it leaves them to the run).
	Axis, Agent, Budget string
	// ModelCostMicros is what the agent reported its model calls cost, in
	// microdollars (Claude Code's total_cost_usd, aider's session cost), 0
	// when it did not say; ModelTokens the tokens it reported using (codex).
	ModelCostMicros int64
	ModelTokens     int64
	// CostMicros is what the attempt's copy cost, in microdollars: the
	// backend's charge when it reports one (Runtime's chargedMicros), else
	// an estimate (CostEstimated) from CPU time and memory × time at
	// Runtime's published prices.
	CostMicros    int64
	CostEstimated bool
}

// Runtime's published prices (runtime-api.md, "Prices"), used to estimate a
// sandbox's cost when the backend charges nothing itself: CPU at $0.025 per
// vCPU-hour, memory at $0.0075 per GiB-hour, in microdollars per second.
const (
	cpuMicrosPerSecond    = 25_000.0 / 3600
	memoryMicrosPerGiBSec = 7_500.0 / 3600
)

// agentFailure describes a failed agent: "exit c", or for a missing program
// (exit 127) the last line it printed, such as "claude: not found; add it
// to setup".
func agentFailure(res sandbox.ExecResult) string {
	if res.ExitCode == 127 {
		lines := strings.Split(strings.TrimSpace(string(res.Stderr)), "\n")
		if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
			if len(last) > 120 {
				last = last[:120] + "…"
			}
			return last
		}
	}
	return fmt.Sprintf("exit %d", res.ExitCode)
}

// The cost and usage agents report about themselves: Claude Code's JSON
// output has "total_cost_usd", aider prints "Cost: $0.01 message, $0.12
// session.", codex prints "tokens used: 12,345".
var (
	totalCostUSD = regexp.MustCompile(`"total_cost_usd"\s*:\s*([0-9]+(?:\.[0-9]+)?)`)
	aiderCost    = regexp.MustCompile(`Cost: \$[0-9.]+ message, \$([0-9]+(?:\.[0-9]+)?) session`)
	tokensUsed   = regexp.MustCompile(`(?i)tokens used:?\s*([0-9][0-9,]*)`)
)

// modelCost returns the last cost the agent's output reports, in
// microdollars, or 0.
func modelCost(out []byte) int64 {
	for _, re := range []*regexp.Regexp{totalCostUSD, aiderCost} {
		m := re.FindAllSubmatch(out, -1)
		if len(m) == 0 {
			continue
		}
		usd, err := strconv.ParseFloat(string(m[len(m)-1][1]), 64)
		if err != nil || usd < 0 || usd > 1e6 {
			return 0
		}
		return int64(usd*1e6 + 0.5)
	}
	return 0
}

// modelTokens returns the token count the agent's output reports last, or 0.
func modelTokens(out []byte) int64 {
	m := tokensUsed.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(strings.ReplaceAll(string(m[len(m)-1][1]), ",", ""), 10, 64)
	return n
}

// costReporter is a sandbox that knows what it was charged.
type costReporter interface {
	CostMicros(ctx context.Context) (micros int64, known bool, err error)
}

// sandboxCost returns what sb cost so far, in microdollars, and whether that
// is an estimate.
func sandboxCost(ctx context.Context, sb sandbox.Sandbox, u sandbox.Usage) (int64, bool) {
	if c, ok := sb.(costReporter); ok {
		if micros, known, err := c.CostMicros(ctx); err == nil && known {
			return micros, false
		}
	}
	gib := float64(u.MaxRSSBytes) / (1 << 30)
	return int64(u.CPUSeconds*cpuMicrosPerSecond + gib*u.Wall.Seconds()*memoryMicrosPerGiBSec + 0.5), true
}

// Result is a finished run.
type Result struct {
	// BaseCommit is the repository commit the attempts started from.
	BaseCommit string
	Attempts   []*Attempt
	// Winner is the winning attempt's number, 0 when none passed.
	Winner int
	// Decided says which selection rule picked the winner, in words.
	Decided   string
	Isolation sandbox.Isolation
	Backend   string
	Duration  time.Duration
	// Baseline is what the tests reported on the base.
	Baseline *Baseline
	// BaseScore is the base's measurement by the score command, when set.
	BaseScore *Measure
}

// WinningAttempt returns the winner, or nil.
func (r *Result) WinningAttempt() *Attempt {
	for _, a := range r.Attempts {
		if a.Number == r.Winner {
			return a
		}
	}
	return nil
}

// Phase is where a run stands.
type Phase string

// Phases of a run, in order.
const (
	PhasePreparing  Phase = "preparing"
	PhaseSetup      Phase = "setup"
	PhaseBaseline   Phase = "baseline"
	PhaseAttempting Phase = "attempting"
	PhaseSelecting  Phase = "selecting"
	PhaseDone       Phase = "done"
)

// AttemptState is where one attempt stands.
type AttemptState string

// Attempt states, in order.
const (
	StateQueued  AttemptState = "queued"
	StateRunning AttemptState = "running"
	StateGrading AttemptState = "grading"
	StateDone    AttemptState = "done"
)

// Progress is a snapshot of a run, handed to the observer on every change.
type Progress struct {
	Phase     Phase
	Isolation sandbox.Isolation
	Attempts  []AttemptProgress
	// Finished holds the attempt's full result once State is StateDone.
	Finished map[int]*Attempt
	// Baseline is set once the tests have run on the base.
	Baseline *Baseline
}

// AttemptProgress is one attempt's row in a Progress.
type AttemptProgress struct {
	Number  int
	Hint    string
	State   AttemptState
	Outcome Outcome
	Started time.Time
	Elapsed time.Duration
}

// SetupError says the setup command failed on the base; no attempt ran.
type SetupError struct {
	ExitCode int
	TimedOut bool
	Log      []byte
}

func (e *SetupError) Error() string {
	if e.TimedOut {
		return "setup timed out"
	}
	return fmt.Sprintf("setup failed (exit %d)", e.ExitCode)
}

// Run executes the task and returns every attempt's result and the winner.
// observe, when not nil, is called with a fresh snapshot after every change
// (never concurrently). The error is non-nil when the run could not happen
// (the base could not be prepared, setup failed: *SetupError, ctx cancelled
// before attempts started); attempt failures are outcomes, not errors.
func (e *Engine) Run(ctx context.Context, task Task, observe func(Progress)) (*Result, error) {
	start := time.Now()
	log := e.Log
	if log == nil {
		log = slog.Default()
	}
	cfg := task.Config
	if cfg.Attempts < 1 || cfg.Attempts > MaxAttempts {
		return nil, fmt.Errorf("attempts must be 1 to %d, not %d", MaxAttempts, cfg.Attempts)
	}
	if strings.TrimSpace(cfg.Agent) == "" {
		return nil, errors.New("no agent command configured")
	}
	r := &runState{engine: e, task: task, log: log, observe: observe}
	r.progress.Phase = PhasePreparing
	r.progress.Isolation = e.Provider.Isolation()
	r.progress.Finished = map[int]*Attempt{}
	for k := 1; k <= cfg.Attempts; k++ {
		r.progress.Attempts = append(r.progress.Attempts, AttemptProgress{Number: k, Hint: cfg.Hint(k), State: StateQueued})
	}
	r.notify()

	if err := os.MkdirAll(e.WorkDir, 0o700); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(e.WorkDir, "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	r.scratch = scratch

	base, hidden, err := r.prepare(ctx)
	if base != nil {
		defer stopQuietly(base)
	}
	if err != nil {
		return nil, err
	}
	r.hidden = hidden
	if err := r.listHidden(); err != nil {
		return nil, err
	}
	r.setPhase(PhaseBaseline)
	if r.baseline, err = r.runBaseline(ctx, base); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.progress.Baseline = r.baseline
	r.mu.Unlock()
	if cfg.Score != nil {
		if r.baseScore, err = r.measureBase(ctx, base); err != nil {
			return nil, err
		}
	}
	log.Info("baseline", "format", r.baseline.Format, "passing", len(r.baseline.Passing), "failing", len(r.baseline.Failing), "hidden", len(r.baseline.Hidden))

	attempts := r.attempt(ctx, base)
	res := &Result{BaseCommit: task.BaseCommit, Attempts: attempts, Isolation: r.progress.Isolation, Backend: e.Provider.Name(),
		Baseline: r.baseline, BaseScore: r.baseScore}
	r.setPhase(PhaseSelecting)
	res.Winner, res.Decided = Select(cfg.Chain(), cfg.Score, attempts)
	res.Duration = time.Since(start)
	r.setPhase(PhaseDone)
	log.Info("run finished", "winner", res.Winner, "decided", res.Decided, "duration", res.Duration.Round(time.Millisecond))
	return res, nil
}

// stopQuietly stops a sandbox with a context of its own, so that stopping
// happens even when the run's context was cancelled.
func stopQuietly(sb sandbox.Sandbox) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = sb.Stop(ctx)
}

type runState struct {
	engine  *Engine
	task    Task
	log     *slog.Logger
	observe func(Progress)
	scratch string
	baseGit string // the base repository's git dir on the bot's side
	hidden  []byte // tar of the hidden tests, rooted at the repository root
	// hiddenPaths are the files of hidden, repository-relative.
	hiddenPaths []string
	baseDir     string // the base tree on the bot's side
	baseline    *Baseline
	baseScore   *Measure

	mu       sync.Mutex // guards progress
	progress Progress
	notifyMu sync.Mutex // serialises observe calls
}

func (r *runState) notify() {
	if r.observe == nil {
		return
	}
	r.notifyMu.Lock()
	defer r.notifyMu.Unlock()
	r.mu.Lock()
	snap := r.progress
	snap.Attempts = append([]AttemptProgress(nil), r.progress.Attempts...)
	snap.Finished = make(map[int]*Attempt, len(r.progress.Finished))
	for k, v := range r.progress.Finished {
		snap.Finished[k] = v
	}
	now := time.Now()
	for i := range snap.Attempts {
		if a := &snap.Attempts[i]; a.State != StateQueued && a.State != StateDone && !a.Started.IsZero() {
			a.Elapsed = now.Sub(a.Started)
		}
	}
	r.mu.Unlock()
	r.observe(snap)
}

func (r *runState) setPhase(p Phase) {
	r.mu.Lock()
	r.progress.Phase = p
	r.mu.Unlock()
	r.notify()
}

func (r *runState) setState(k int, s AttemptState, done *Attempt) {
	r.mu.Lock()
	a := &r.progress.Attempts[k-1]
	if a.Started.IsZero() && s != StateQueued {
		a.Started = time.Now()
	}
	a.State = s
	if done != nil {
		a.Outcome = done.Outcome
		a.Elapsed = time.Since(a.Started)
		r.progress.Finished[k] = done
	}
	r.mu.Unlock()
	r.notify()
}

// prepare builds the base on the bot's side (the tree at BaseCommit, hidden
// tests moved out, a fresh one-commit history), uploads it into a new
// sandbox and runs setup there. It returns the base sandbox (also on error,
// when one was created, so the caller stops it) and the hidden tests as tar.
func (r *runState) prepare(ctx context.Context) (sandbox.Sandbox, []byte, error) {
	cfg := r.task.Config
	baseDir := filepath.Join(r.scratch, "base")
	if err := os.MkdirAll(baseDir, 0o755); err != nil {
		return nil, nil, err
	}
	index := filepath.Join(r.scratch, "checkout.index")
	repoEnv := []string{"GIT_INDEX_FILE=" + index}
	if _, err := git(ctx, r.task.RepoDir, repoEnv, nil, "read-tree", r.task.BaseCommit); err != nil {
		return nil, nil, fmt.Errorf("read base commit %s: %w", r.task.BaseCommit, err)
	}
	if _, err := git(ctx, r.task.RepoDir, repoEnv, nil, "checkout-index", "-a", "-f", "--prefix="+baseDir+"/"); err != nil {
		return nil, nil, fmt.Errorf("check out base commit: %w", err)
	}
	var hidden []byte
	r.baseDir = baseDir
	switch {
	case cfg.HiddenRepo != "":
		// From a companion repository, fetched on the bot's side.
		if r.task.HiddenDir == "" {
			return nil, nil, fmt.Errorf("hidden_tests: the companion repository %s was not fetched", cfg.HiddenRepo)
		}
		src := filepath.Join(r.task.HiddenDir, filepath.FromSlash(cfg.HiddenTests))
		if fi, err := os.Lstat(src); err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("hidden_tests: folder %q not found in %s", cfg.HiddenTests, cfg.HiddenRepo)
		}
		var buf bytes.Buffer
		if err := tarDir(&buf, src, ""); err != nil {
			return nil, nil, fmt.Errorf("pack hidden tests: %w", err)
		}
		hidden = buf.Bytes()
	case cfg.HiddenTests != "":
		src := filepath.Join(baseDir, filepath.FromSlash(cfg.HiddenTests))
		fi, err := os.Lstat(src)
		if err != nil || !fi.IsDir() {
			return nil, nil, fmt.Errorf("hidden_tests: folder %q not found at the base commit", cfg.HiddenTests)
		}
		var buf bytes.Buffer
		if err := tarDir(&buf, src, ""); err != nil {
			return nil, nil, fmt.Errorf("pack hidden tests: %w", err)
		}
		hidden = buf.Bytes()
		if err := os.RemoveAll(src); err != nil {
			return nil, nil, err
		}
	}
	if _, err := git(ctx, baseDir, nil, nil, "init", "-q", "-b", "main"); err != nil {
		return nil, nil, err
	}
	if _, err := git(ctx, baseDir, nil, nil, "add", "-A", "-f"); err != nil {
		return nil, nil, err
	}
	msg := fmt.Sprintf("base %s", r.task.BaseCommit)
	if _, err := git(ctx, baseDir, nil, nil, "commit", "-q", "--allow-empty", "--no-verify", "-m", msg); err != nil {
		return nil, nil, err
	}
	r.baseGit = filepath.Join(baseDir, ".git")

	labels := map[string]string{"role": "base"}
	for k, v := range r.task.Labels {
		labels[k] = v
	}
	base, err := r.engine.Provider.Create(ctx, sandbox.CreateOptions{Labels: labels})
	if err != nil {
		return nil, nil, fmt.Errorf("create base sandbox: %w", err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarDir(pw, baseDir, "")) }()
	if err := base.PutArchive(ctx, sandbox.Workspace, pr); err != nil {
		pr.CloseWithError(err)
		return base, nil, fmt.Errorf("upload base tree: %w", err)
	}
	r.log.Info("base prepared", "commit", r.task.BaseCommit, "sandbox", base.ID())

	if strings.TrimSpace(cfg.Setup) != "" {
		r.setPhase(PhaseSetup)
		res, err := base.Exec(ctx, sandbox.ExecRequest{Shell: cfg.Setup, Timeout: cfg.SetupTimeout, Network: true})
		if err != nil {
			return base, nil, fmt.Errorf("run setup: %w", err)
		}
		if res.TimedOut || res.ExitCode != 0 {
			return base, nil, &SetupError{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Log: joinLog(res)}
		}
		r.log.Info("setup done", "duration", res.Duration.Round(time.Millisecond))
		if err := r.snapshotSetup(ctx, base); err != nil {
			return base, nil, fmt.Errorf("take what setup changed: %w", err)
		}
	}
	return base, hidden, nil
}

// setupPatchLimit caps what setup may change in tracked or unignored files
// (lock files, generated code), in bytes of diff.
const setupPatchLimit = 256 << 20

// snapshotSetup commits, on the bot's side, what setup changed in the
// workspace (a lock file npm wrote, generated sources; not what git
// ignores), so attempts' patches are taken against the prepared base and
// never carry setup's changes.
func (r *runState) snapshotSetup(ctx context.Context, base sandbox.Sandbox) error {
	archive, err := base.GetArchive(ctx, sandbox.Workspace)
	if err != nil {
		return err
	}
	dir := filepath.Join(r.scratch, "setup")
	p, err := takePatch(ctx, r.baseGit, dir, archive, patchOptions{MaxBytes: setupPatchLimit})
	archive.Close()
	os.RemoveAll(dir)
	if err != nil || p.Empty() {
		return err
	}
	if _, err := git(ctx, r.baseDir, nil, p.Diff, "apply", "--index", "--binary", "--whitespace=nowarn"); err != nil {
		return err
	}
	_, err = git(ctx, r.baseDir, nil, nil, "commit", "-q", "--no-verify", "-m", "setup")
	r.log.Info("setup changed the workspace", "files", len(p.Changes))
	return err
}

// attempt forks the base into one copy per attempt and runs them all; a copy
// that could not be started is a "sandbox error" attempt.
func (r *runState) attempt(ctx context.Context, base sandbox.Sandbox) []*Attempt {
	cfg := r.task.Config
	n := cfg.Attempts
	r.setPhase(PhaseAttempting)
	copies, forkErr := base.Fork(ctx, n)
	results := make([]*Attempt, n)
	// With stop_early, the first pass cancels the attempts still going.
	others, stopOthers := context.WithCancel(ctx)
	defer stopOthers()
	parallel := cfg.Parallel
	if parallel <= 0 {
		parallel = n
	}
	slots := make(chan struct{}, parallel)
	var mu sync.Mutex // guards spent and passed
	var spent int64   // microdollars of finished attempts
	passed := false
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		k := i + 1
		if i >= len(copies) {
			msg := "fork failed"
			if forkErr != nil {
				msg = forkErr.Error()
			}
			results[i] = &Attempt{Number: k, Hint: cfg.Hint(k), Axis: cfg.Axis(k), Outcome: outcome(OutcomeSandboxError, msg), AgentExit: -1, Finished: time.Now()}
			r.setState(k, StateDone, results[i])
			continue
		}
		// Attempts take their turn in order: with parallel below n, attempt
		// k starts only when a slot frees, and the budget and stop_early are
		// checked then, against what the finished attempts spent.
		slots <- struct{}{}
		mu.Lock()
		skip := ""
		switch {
		case cfg.StopEarly && passed:
			skip = "stopped early: another attempt passed"
		case cfg.BudgetUSD > 0 && float64(spent) >= cfg.BudgetUSD*1e6:
			skip = "budget"
		}
		mu.Unlock()
		wg.Add(1)
		go func(k int, sb sandbox.Sandbox) {
			defer wg.Done()
			defer func() { <-slots }()
			var a *Attempt
			switch skip {
			case "":
				a = r.runAttempt(others, k, sb, base)
			case "budget":
				stopQuietly(sb)
				a = &Attempt{Number: k, Hint: cfg.Hint(k), Axis: cfg.Axis(k), Outcome: outcome(OutcomeSkippedBudget, ""), AgentExit: -1, Finished: time.Now()}
			default:
				stopQuietly(sb)
				a = &Attempt{Number: k, Hint: cfg.Hint(k), Axis: cfg.Axis(k), Outcome: outcome(OutcomeCancelled, skip), AgentExit: -1, Finished: time.Now()}
			}
			mu.Lock()
			spent += a.CostMicros + a.ModelCostMicros
			if a.Outcome.Pass() && cfg.StopEarly && !passed {
				passed = true
				stopOthers()
			}
			mu.Unlock()
			results[k-1] = a
			r.setState(k, StateDone, a)
		}(k, copies[i])
	}
	wg.Wait()
	return results
}

// runAttempt runs the agent in its copy, takes its patch, applies the path
// rules and grades it in a pristine copy of the base.
func (r *runState) runAttempt(ctx context.Context, k int, sb sandbox.Sandbox, base sandbox.Sandbox) *Attempt {
	cfg := r.task.Config
	a := &Attempt{Number: k, Hint: cfg.Hint(k), Axis: cfg.Axis(k), AgentExit: -1}
	a.Agent, a.Budget = cfg.Choices(k)
	agent, agentTimeout := cfg.AgentFor(k)
	log := r.log.With("attempt", k)
	stopped := false
	stop := func() {
		if !stopped {
			bg := context.WithoutCancel(ctx)
			if u, err := sb.Usage(bg); err == nil {
				a.Usage = u
			}
			a.CostMicros, a.CostEstimated = sandboxCost(bg, sb, a.Usage)
			stopQuietly(sb)
			stopped = true
		}
	}
	defer stop()
	fail := func(err error) *Attempt {
		if a.Finished.IsZero() {
			a.Finished = time.Now()
		}
		if ctx.Err() != nil {
			a.Outcome = outcome(OutcomeCancelled, "")
		} else {
			a.Outcome = outcome(OutcomeSandboxError, err.Error())
		}
		log.Warn("attempt failed", "err", err)
		return a
	}

	r.setState(k, StateRunning, nil)
	if err := sb.WriteFile(ctx, PromptPath, []byte(Prompt(r.task, a.Hint)), 0o644); err != nil {
		return fail(fmt.Errorf("write prompt: %w", err))
	}
	if r.task.AgentFiles != nil {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(tarFS(pw, r.task.AgentFiles)) }()
		if err := sb.PutArchive(ctx, AgentDirPath, pr); err != nil {
			pr.CloseWithError(err)
			return fail(fmt.Errorf("upload agent files: %w", err))
		}
	}
	env := map[string]string{}
	for key, v := range r.task.AgentEnv {
		env[key] = v
	}
	env["BESTOFN_PROMPT_FILE"] = PromptPath
	env["BESTOFN_HINT"] = a.Hint
	env["BESTOFN_ATTEMPT"] = strconv.Itoa(k)
	if turns := cfg.Turns(k); turns > 0 {
		env["BESTOFN_MAX_TURNS"] = strconv.Itoa(turns)
	}
	res, err := sb.Exec(ctx, sandbox.ExecRequest{Shell: agent, Env: env, Timeout: agentTimeout, Network: true})
	a.Finished = time.Now()
	if err != nil {
		return fail(fmt.Errorf("run agent: %w", err))
	}
	a.AgentExit, a.AgentDuration, a.AgentLog = res.ExitCode, res.Duration, joinLog(res)
	a.ModelCostMicros, a.ModelTokens = modelCost(a.AgentLog), modelTokens(a.AgentLog)
	log.Info("agent finished", "exit", res.ExitCode, "timed_out", res.TimedOut, "duration", res.Duration.Round(time.Millisecond))

	// The patch is taken even from a failed agent, so the scorecard can show
	// what it left; it is graded only when the agent succeeded.
	archive, err := sb.GetArchive(ctx, sandbox.Workspace)
	if err != nil {
		return fail(fmt.Errorf("download workspace: %w", err))
	}
	patchDir := filepath.Join(r.scratch, fmt.Sprintf("attempt-%d", k))
	patch, err := takePatch(ctx, r.baseGit, patchDir, archive, patchOptions{
		MaxBytes: cfg.MaxPatchBytes, Tests: cfg.Tests, Watch: watchedFiles(cfg.Test)})
	archive.Close()
	os.RemoveAll(patchDir)
	tooLarge := errors.Is(err, ErrPatchTooLarge)
	if err != nil && !tooLarge {
		return fail(fmt.Errorf("take patch: %w", err))
	}
	a.Patch = patch
	stop()

	switch {
	case res.TimedOut:
		a.Outcome = outcome(OutcomeAgentTimedOut, "")
		return a
	case res.ExitCode != 0:
		a.Outcome = outcome(OutcomeAgentFailed, agentFailure(res))
		return a
	case tooLarge:
		// takePatch's error reads as the outcome: "patch too large (over 1024 KiB)".
		a.Outcome = Outcome{Kind: OutcomePatchTooLarge, Text: err.Error()}
		return a
	}
	if o, done := r.classify(patch); done {
		a.Outcome = o
		return a
	}
	r.setState(k, StateGrading, nil)
	gradeStart := time.Now()
	err = r.grade(ctx, base, a)
	a.GradeDuration = time.Since(gradeStart)
	if err != nil {
		return fail(fmt.Errorf("grade: %w", err))
	}
	log.Info("graded", "outcome", a.Outcome.Text, "duration", a.GradeDuration.Round(time.Millisecond))
	return a
}

// Select picks the winner among passing attempts by the rules set in
// advance (design doc, "Select"): the chain in order (score: the better
// median; smallest-patch: fewest changed lines; fewest-files; lint: clean
// first), then smallest patch, fewest files, earliest finish and lowest
// attempt number. score says whether lower or higher is better (nil when no
// score is set). It returns 0 and "" when no attempt passed, and otherwise
// the winner and the rule that decided, in words.
func Select(chain []string, score *ScoreSpec, attempts []*Attempt) (int, string) {
	var pass []*Attempt
	for _, a := range attempts {
		if a != nil && a.Outcome.Pass() {
			pass = append(pass, a)
		}
	}
	if len(pass) == 0 {
		return 0, ""
	}
	type key struct {
		name string
		of   func(*Attempt) float64
		unit string
	}
	rules := map[string]key{
		SelectSmallestPatch: {"smallest patch", func(a *Attempt) float64 { return float64(a.Patch.Lines()) }, "changed lines"},
		SelectFewestFiles:   {"fewest files", func(a *Attempt) float64 { return float64(len(a.Patch.Changes)) }, "files"},
		SelectLint: {"lint", func(a *Attempt) float64 {
			if a.LintClean != nil && *a.LintClean {
				return 0
			}
			return 1
		}, ""},
		SelectScore: {"score", func(a *Attempt) float64 {
			if a.Score == nil || a.Score.Err != "" {
				return math.Inf(1)
			}
			if score != nil && score.Better == "higher" {
				return -a.Score.Median
			}
			return a.Score.Median
		}, "score"},
	}
	var keys []key
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, chain...), SelectSmallestPatch, SelectFewestFiles) {
		if k, ok := rules[name]; ok && !seen[name] && (name != SelectScore || score != nil) {
			keys, seen[name] = append(keys, k), true
		}
	}
	keys = append(keys,
		key{"earliest finish", func(a *Attempt) float64 { return float64(a.Finished.UnixNano()) }, ""},
		key{"lowest attempt number", func(a *Attempt) float64 { return float64(a.Number) }, ""})
	sort.SliceStable(pass, func(i, j int) bool {
		for _, k := range keys {
			if x, y := k.of(pass[i]), k.of(pass[j]); x != y {
				return x < y
			}
		}
		return false
	})
	if len(pass) == 1 {
		return pass[0].Number, "the only passing attempt"
	}
	w, second := pass[0], pass[1]
	for _, k := range keys {
		x, y := k.of(w), k.of(second)
		if x == y {
			continue
		}
		switch {
		case k.unit == "score":
			return w.Number, fmt.Sprintf("score (%s against %s for attempt %d)", w.Score.String(), scoreText(second.Score), second.Number)
		case k.unit != "":
			return w.Number, fmt.Sprintf("%s (%g %s against %g for attempt %d)", k.name, x, k.unit, y, second.Number)
		case k.name == "lint":
			return w.Number, fmt.Sprintf("lint (clean, attempt %d is not)", second.Number)
		}
		return w.Number, fmt.Sprintf("%s (ahead of attempt %d)", k.name, second.Number)
	}
	return w.Number, "lowest attempt number"
}

func scoreText(m *Measure) string {
	if m == nil {
		return "no score"
	}
	return m.String()
}

func joinLog(res sandbox.ExecResult) []byte {
	out := append(append([]byte{}, res.Stdout...), res.Stderr...)
	if len(out) > logTail {
		out = out[len(out)-logTail:]
	}
	return out
}

// tarDir writes the tree under dir as a tar stream with names relative to
// dir (prefixed by prefix), without following symlinks, keeping modes.
func tarDir(w io.Writer, dir, prefix string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		name := filepath.ToSlash(filepath.Join(prefix, rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = name
		h.Uname, h.Gname, h.Uid, h.Gid = "", "", 0, 0
		if fi.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// tarFS writes every file of fsys as a tar stream; files whose name ends in
// ".sh" are executable.
func tarFS(w io.Writer, fsys fs.FS) error {
	tw := tar.NewWriter(w)
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: p + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := int64(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
