package handlers

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/store"
)

// writeRoles may start runs: "write, maintain or admin on the repository"
// (design doc, "Intake").
var writeRoles = map[string]bool{"admin": true, "maintain": true, "write": true}

// MaxJobTries is how many times a job is started before it is given up: a
// job that was interrupted (the bot restarted) runs again, but one that keeps
// taking the process down does not loop forever.
const MaxJobTries = 3

// runJob runs one claimed job and records how it ended. A panic in the job
// is turned into a failed job, never a dead worker.
func (s *Server) runJob(ctx context.Context, job *store.Job) {
	log := s.log.With("job", job.ID, "repo", job.Repo, "issue", job.Issue, "github_delivery_id", job.DeliveryID,
		"github_installation_id", job.InstallationID)
	if job.Tries > MaxJobTries {
		log.Error("job given up after repeated interruptions", "tries", job.Tries)
		_ = s.opts.Store.FinishJob(ctx, job.ID, store.JobFailed, fmt.Sprintf("interrupted %d times; given up", job.Tries-1))
		return
	}
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if job.Kind == JobRun {
		s.mu.Lock()
		s.cancels[job.ID] = cancel
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.cancels, job.ID)
			s.mu.Unlock()
		}()
		go s.watchCancel(jctx, job.ID, cancel, time.Second)
	}
	status, err := func() (status store.JobStatus, err error) {
		defer func() {
			if p := recover(); p != nil {
				status, err = store.JobFailed, fmt.Errorf("panic: %v", p)
			}
		}()
		switch job.Kind {
		case JobRun:
			return s.runIssue(jctx, log, job)
		case JobReply:
			return s.runReply(jctx, log, job)
		case JobCommand:
			return s.runCommand(jctx, log, job)
		case JobPRClosed:
			return s.runPRClosed(jctx, log, job)
		case JobInstallation:
			return s.runInstallation(jctx, log, job)
		default:
			return store.JobFailed, fmt.Errorf("unknown job kind %q", job.Kind)
		}
	}()
	if ctx.Err() != nil {
		// Shutting down: leave the job running; the next start requeues it.
		log.Info("job interrupted by shutdown")
		return
	}
	errText := ""
	if err != nil {
		errText = err.Error()
		log.Error("job failed", "err", err)
	}
	if ferr := s.opts.Store.FinishJob(context.WithoutCancel(ctx), job.ID, status, errText); ferr != nil {
		log.Error("finish job", "err", ferr)
	}
}

// runIssue is the main job: check the trigger against the repository's
// configuration, check the sender may, then run best-of-N and publish.
func (s *Server) runIssue(ctx context.Context, log *slog.Logger, job *store.Job) (store.JobStatus, error) {
	var req runRequest
	gh, err := s.jobClient(job, &req)
	if err != nil {
		return store.JobFailed, err
	}
	where := req.statusOn()
	cfgData, _, err := gh.FetchFile(ctx, req.Owner, req.Name, explore.ConfigPath, req.DefaultBranch)
	if err != nil {
		return store.JobFailed, err
	}
	// The label is known only from the file; a bad file still names its label
	// when it can be read, so its errors reach the right issues.
	cfg, cfgErr := explore.ParseConfig(cfgData, nil)
	if req.Trigger == TriggerLabel && req.Label != cfg.Label {
		log.Debug("label is not the configured one", "label", req.Label, "configured", cfg.Label)
		return store.JobIgnored, nil
	}
	refuse := func(result, text string) (store.JobStatus, error) {
		s.metrics.runs.WithLabelValues(result).Inc()
		react(ctx, log, gh, req.Owner, req.Name, req.CommentID, "-1")
		if _, err := gh.CreateIssueComment(ctx, req.Owner, req.Name, where, marker(0, "")+text+footer(0)); err != nil {
			return store.JobFailed, err
		}
		return store.JobDone, nil
	}
	if cfgErr == nil && (cfg.Attempts > s.opts.MaxAttempts || req.Attempts > s.opts.MaxAttempts) {
		n := max(cfg.Attempts, req.Attempts)
		return refuse("config_error", fmt.Sprintf("⚠️ bestofn did not start: %d attempts asked, and this bot runs at most %d per run (its MAX_ATTEMPTS).", n, s.opts.MaxAttempts))
	}
	if cfgErr != nil {
		return refuse("config_error", fmt.Sprintf("⚠️ bestofn did not start: the configuration file has problems.\n\n%s\n\nFix `%s` on the default branch, then ask again.",
			bulletConfigError(cfgErr), explore.ConfigPath))
	}
	ok, role, err := mayWrite(ctx, gh, req.Owner, req.Name, req.Sender, req.Association)
	if err != nil {
		return store.JobFailed, err
	}
	if !ok {
		how := fmt.Sprintf("A maintainer can add the `%s` label or comment `/bestofn` to start it.", cfg.Label)
		if req.Trigger == TriggerLabel {
			how = "The label stays; a maintainer can remove it and add it again, or comment `/bestofn`."
		}
		return refuse("refused", fmt.Sprintf("@%s bestofn runs only for people with write access to this repository (you have %s). %s", req.Sender, role, how))
	}
	// A trigger that waited while another run of this issue went on does
	// nothing: one run per issue.
	if other, err := s.opts.Store.RunActiveSince(ctx, job.Repo, req.Issue, job.ID, job.CreatedAt); err != nil {
		return store.JobFailed, err
	} else if other != nil {
		text := fmt.Sprintf("A run was already in progress on this issue when this was asked (run %d, %s)", other.ID, other.Status)
		if other.PRNumber != 0 {
			text += fmt.Sprintf("; its result is on #%d", other.PRNumber)
		}
		return refuse("busy", text+". Ask again to run once more; `/bestofn cancel` stops a run in progress.")
	}
	if err := s.opts.Store.TakeRunLock(ctx, job.ID); err != nil {
		return store.JobFailed, err
	}
	react(ctx, log, gh, req.Owner, req.Name, req.CommentID, "eyes")
	if req.Title == "" {
		is, err := gh.Issue(ctx, req.Owner, req.Name, req.Issue)
		if err != nil {
			return store.JobFailed, err
		}
		req.Title, req.Body = is.Title, is.Body
	}

	// A run asked for on the bot's pull request belongs to it from the start,
	// so pick and status find it even when no attempt passes.
	run := &store.Run{JobID: job.ID, Repo: req.repo(), Issue: req.Issue, Status: store.RunPreparing, PRNumber: req.PR}
	if err := s.opts.Store.CreateRun(ctx, run); err != nil {
		return store.JobFailed, err
	}
	log = log.With("run", run.ID)
	st := &statusComment{s: s, gh: gh, req: req, run: run}
	if err := st.update(ctx, renderStatus(run.ID, s.runURL(run.ID), statusView{Phase: "preparing", Note: "Fetching the repository."})); err != nil {
		return store.JobFailed, err
	}
	if err := s.opts.Store.UpdateRun(ctx, run); err != nil {
		return store.JobFailed, err
	}

	res, err := s.execute(ctx, log, gh, req, cfgData, run, st)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err() // cancelled while attempts ran: nothing was published
	}
	if err != nil {
		bg := context.WithoutCancel(ctx)
		view := statusView{Phase: "failed", Note: failureNote(err), Result: res}
		status := store.JobFailed
		run.Status, run.Error, run.FinishedAt = store.RunFailed, err.Error(), time.Now()
		if ctx.Err() != nil {
			cancelled, _ := s.opts.Store.CancelRequested(bg, job.ID)
			if !cancelled {
				return store.JobFailed, ctx.Err() // shutting down: the job runs again at the next start
			}
			run.Status, run.Error, status = store.RunCancelled, "cancelled", store.JobCancelled
			view = statusView{Phase: "cancelled", Note: "Cancelled with `/bestofn cancel`: the agents were stopped and the sandboxes removed; nothing was published.", Result: res}
		}
		s.metrics.runs.WithLabelValues(string(run.Status)).Inc()
		_ = s.opts.Store.UpdateRun(bg, run)
		_ = st.update(bg, renderStatus(run.ID, s.runURL(run.ID), view))
		return status, err
	}
	return store.JobDone, nil
}

// execute clones, runs the engine and publishes; the status comment follows
// every step.
func (s *Server) execute(ctx context.Context, log *slog.Logger, gh *github.Client, req runRequest, cfgData []byte,
	run *store.Run, st *statusComment) (*explore.Result, error) {
	runDir := filepath.Join(s.opts.DataDir, "runs", strconv.FormatInt(run.ID, 10))
	if err := os.RemoveAll(runDir); err != nil {
		return nil, err
	}
	defer os.RemoveAll(runDir)
	token, err := gh.Token(ctx)
	if err != nil {
		return nil, err
	}
	repoDir := filepath.Join(runDir, "repo")
	branch := req.DefaultBranch
	if req.Trigger == TriggerRevise {
		branch = branchFor(req.Issue) // a revision starts from the pull request's branch
	}
	base, err := github.CloneBranch(ctx, req.CloneURL, token, repoDir, branch)
	if err != nil {
		return nil, err
	}

	cfg, err := explore.ParseConfig(cfgData, os.DirFS(repoDir))
	if err != nil {
		return nil, err
	}
	if cfg.Agent == "" {
		cfg.Agent = s.opts.DefaultAgent
	}
	for k := 1; k <= cfg.Attempts; k++ {
		if agent, _ := cfg.AgentFor(k); agent == "" {
			return nil, errors.New("no agent configured: set `agent` in " + explore.ConfigPath)
		}
	}
	if req.Attempts > 0 {
		cfg.Attempts = req.Attempts
	}
	run.BaseCommit = base
	run.Config, _ = json.Marshal(cfg)
	if err := s.opts.Store.UpdateRun(ctx, run); err != nil {
		return nil, err
	}

	comments, err := gh.IssueComments(ctx, req.Owner, req.Name, req.Issue)
	if err != nil {
		return nil, err
	}
	if req.Trigger == TriggerRevise {
		// The review happens on the pull request: its conversation goes
		// into the prompt too.
		more, err := gh.IssueComments(ctx, req.Owner, req.Name, req.PR)
		if err != nil {
			return nil, err
		}
		comments = append(comments, more...)
		reviews, err := gh.ReviewComments(ctx, req.Owner, req.Name, req.PR)
		if err != nil {
			return nil, err
		}
		for _, rc := range reviews {
			comments = append(comments, github.Comment{User: rc.User, UserType: "User",
				Body: fmt.Sprintf("(review comment on %s line %d) %s", rc.Path, rc.Line, rc.Body)})
		}
	}
	issue := explore.Issue{Number: req.Issue, Title: req.Title, Body: req.Body}
	for _, c := range comments {
		if c.UserType == "Bot" || strings.HasSuffix(c.User, "[bot]") || ParseCommand(c.Body).Command != nil {
			continue
		}
		issue.Comments = append(issue.Comments, explore.IssueComment{Author: c.User, Body: c.Body})
	}
	hiddenDir := ""
	if cfg.HiddenRepo != "" {
		// A private companion repository, read with this installation's
		// token on the bot's side only.
		owner, name, _ := strings.Cut(cfg.HiddenRepo, "/")
		// Its files reach the grading copies and the run page: it must be
		// the same owner's, and the person who asked must be able to read it.
		if !strings.EqualFold(owner, req.Owner) {
			return nil, fmt.Errorf("hidden_tests: the companion repository %s must belong to %s", cfg.HiddenRepo, req.Owner)
		}
		switch role, err := gh.Permission(ctx, owner, name, req.Sender); {
		case err != nil:
			return nil, fmt.Errorf("hidden_tests: %w", err)
		case role == "none" || role == "":
			return nil, fmt.Errorf("hidden_tests: @%s cannot read %s", req.Sender, cfg.HiddenRepo)
		}
		repo, err := gh.Repository(ctx, owner, name)
		if err != nil {
			return nil, fmt.Errorf("hidden_tests: cannot read %s (is the App installed on it?): %w", cfg.HiddenRepo, err)
		}
		tok, err := gh.Token(ctx)
		if err != nil {
			return nil, err
		}
		hiddenDir = filepath.Join(runDir, "hidden")
		_, err = github.CloneBranch(ctx, repo.CloneURL, tok, hiddenDir, repo.DefaultBranch)
		if err != nil {
			return nil, fmt.Errorf("hidden_tests: %w", err)
		}
	}
	task := explore.Task{
		Repo: req.repo(), RepoDir: repoDir, BaseCommit: base, Issue: issue, Config: cfg,
		AgentFiles: s.opts.AgentFiles, AgentEnv: s.opts.AgentEnv, HiddenDir: hiddenDir, Revision: req.Revise,
		Labels: map[string]string{"run": strconv.FormatInt(run.ID, 10)},
	}
	if cfg.Agent != s.opts.DefaultAgent {
		task.AgentFiles = nil // the default agent's helper files go only with it
	}
	saved := map[int]bool{}
	observe := func(p explore.Progress) {
		for k, a := range p.Finished {
			if !saved[k] {
				saved[k] = true
				s.metrics.attempts.WithLabelValues(string(a.Outcome.Kind)).Inc()
				if err := s.opts.Store.SaveAttempt(context.WithoutCancel(ctx), attemptRow(run.ID, a)); err != nil {
					log.Error("save attempt", "attempt", k, "err", err)
				}
			}
		}
		if p.Phase == explore.PhaseAttempting && run.Status == store.RunPreparing {
			run.Status = store.RunAttempting
			_ = s.opts.Store.UpdateRun(context.WithoutCancel(ctx), run)
		}
		if err := st.update(ctx, renderStatus(run.ID, s.runURL(run.ID), statusFromProgress(p, cfg))); err != nil {
			log.Warn("edit status comment", "err", err)
		}
	}
	res, err := s.engine.Run(ctx, task, observe)
	if err != nil {
		return nil, err
	}
	s.metrics.runSeconds.Observe(res.Duration.Seconds())
	run.Winner = res.Winner
	run.Status = store.RunPublishing
	if err := s.opts.Store.UpdateRun(ctx, run); err != nil {
		return res, err
	}
	_ = st.update(ctx, renderStatus(run.ID, s.runURL(run.ID), statusView{Phase: "publishing", Result: res, Config: cfg}))

	// Publishing is not cancelled halfway: a branch without its pull request
	// or scorecard would say something that is not so.
	ctx = context.WithoutCancel(ctx)
	card := renderScorecard(run.ID, s.runURL(run.ID), req, cfg, res)
	if res.Winner == 0 {
		if _, err := gh.CreateIssueComment(ctx, req.Owner, req.Name, req.statusOn(), card); err != nil {
			return res, err
		}
		s.metrics.runs.WithLabelValues("no_pass").Inc()
	} else {
		number, url, err := s.publish(ctx, gh, run.ID, req, repoDir, cfg, res)
		if err != nil {
			return res, fmt.Errorf("publish: %w", err)
		}
		run.PRNumber, run.PRURL = number, url
		if _, err := gh.CreateIssueComment(ctx, req.Owner, req.Name, number, card); err != nil {
			return res, err
		}
		s.metrics.runs.WithLabelValues("pr").Inc()
	}
	run.Status, run.FinishedAt = store.RunDone, time.Now()
	if err := s.opts.Store.UpdateRun(ctx, run); err != nil {
		return res, err
	}
	view := statusView{Phase: "done", Result: res, Config: cfg, PRNumber: run.PRNumber, PRURL: run.PRURL}
	if err := st.update(ctx, renderStatus(run.ID, s.runURL(run.ID), view)); err != nil {
		return res, err
	}
	log.Info("run done", "winner", res.Winner, "pr", run.PRNumber)
	return res, nil
}

// publish commits the winning patch on bestofn/issue-<N> with the base
// commit as parent (Git Data API), points the branch at it (creating or
// force-updating it) and opens or updates the pull request. It returns the
// pull request's number and URL.
func (s *Server) publish(ctx context.Context, gh *github.Client, runID int64, req runRequest, repoDir string, cfg explore.Config,
	res *explore.Result) (int, string, error) {
	win := res.WinningAttempt()
	files, err := explore.PatchFiles(ctx, repoDir, res.BaseCommit, win.Patch.Diff)
	if err != nil {
		return 0, "", err
	}
	changes := make([]github.FileChange, 0, len(files))
	for _, f := range files {
		changes = append(changes, github.FileChange{Path: f.Path, Mode: f.Mode, Content: f.Content, Delete: f.Deleted})
	}
	msg := fmt.Sprintf("Fix #%d: %s\n\nAttempt %d of %d, chosen by bestofn: %s.", req.Issue, req.Title, win.Number, len(res.Attempts), res.Decided)
	sha, err := gh.CommitFiles(ctx, req.Owner, req.Name, github.CommitRequest{BaseCommit: res.BaseCommit, Message: msg, Changes: changes})
	if err != nil {
		return 0, "", err
	}
	branch := branchFor(req.Issue)
	if err := gh.SetBranch(ctx, req.Owner, req.Name, branch, sha); err != nil {
		return 0, "", err
	}
	number, url, _, err := gh.EnsurePullRequest(ctx, req.Owner, req.Name, github.PullRequestSpec{
		Head: branch, Base: req.DefaultBranch, Title: fmt.Sprintf("Fix #%d: %s", req.Issue, req.Title),
		Body: renderPRBody(runID, req, cfg, res), Draft: true,
	})
	return number, url, err
}

// attemptRow converts an engine attempt to its store row.
func attemptRow(runID int64, a *explore.Attempt) *store.Attempt {
	added, deleted := 0, 0
	for _, c := range a.Patch.Changes {
		added += c.Added
		deleted += c.Deleted
	}
	detail, _ := json.Marshal(map[string]any{
		"paths": a.Outcome.Paths, "changes": a.Patch.Changes, "axis": a.Axis, "agent": a.Agent, "budget": a.Budget, "model_cost_micros": a.ModelCostMicros, "model_tokens": a.ModelTokens,
		"agent_log": string(a.AgentLog), "test_log": string(a.TestLog),
	})
	return &store.Attempt{
		RunID: runID, Number: a.Number, Hint: a.Hint, Outcome: a.Outcome.Text, OutcomeKind: string(a.Outcome.Kind),
		Patch: a.Patch.Diff, LinesAdded: added, LinesDeleted: deleted, FilesChanged: len(a.Patch.Changes),
		AgentExit: a.AgentExit, AgentDuration: a.AgentDuration, GradeDuration: a.GradeDuration,
		CPUSeconds: a.Usage.CPUSeconds, FinishedAt: a.Finished, Detail: string(detail),
		CostMicros: a.CostMicros + a.ModelCostMicros, CostEstimated: a.CostEstimated,
	}
}

func failureNote(err error) string {
	var se *explore.SetupError
	if errors.As(err, &se) {
		return fmt.Sprintf("The setup command failed on the base (%s), so no attempt ran.\n\n%s", se.Error(), details("setup log", se.Log))
	}
	var be *explore.BaselineError
	if errors.As(err, &be) {
		return fmt.Sprintf("The tests cannot run on the base (%s), so no attempt would be graded honestly and none ran. Fix `setup` or `test` in `%s`.\n\n%s",
			be.Reason, explore.ConfigPath, details("test log on the base", be.Log))
	}
	return "The run stopped: " + err.Error()
}

func bulletConfigError(err error) string {
	var ce *explore.ConfigError
	if !errors.As(err, &ce) {
		return "- " + err.Error()
	}
	var b strings.Builder
	if len(ce.Unknown) > 0 {
		fmt.Fprintf(&b, "- unknown keys: %s\n", "`"+strings.Join(ce.Unknown, "`, `")+"`")
	}
	for _, m := range ce.Invalid {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// runURL is the run page's address, or "" without PublicURL. It carries
// the run's key (see runKey): only people who can read the bot's comments
// get the link.
func (s *Server) runURL(id int64) string {
	if s.opts.PublicURL == "" {
		return ""
	}
	return strings.TrimSuffix(s.opts.PublicURL, "/") + "/runs/" + strconv.FormatInt(id, 10) + "?key=" + s.runKey(id)
}

// runKey is the secret part of a run page's address: the hex HMAC-SHA256 of
// the run id under the webhook secret, cut to 128 bits. Run pages show
// patches and full logs (hidden test output included), so run ids alone,
// which are easy to guess, must not open them.
func (s *Server) runKey(id int64) string {
	mac := hmac.New(sha256.New, s.opts.Secret)
	fmt.Fprintf(mac, "bestofn run page %d", id)
	return hex.EncodeToString(mac.Sum(nil))[:32]
}

// statusComment is a run's one status comment on the issue: created on the
// first update, edited in place afterwards, and only when its text changes.
type statusComment struct {
	s    *Server
	gh   *github.Client
	req  runRequest
	run  *store.Run
	last string
}

func (c *statusComment) update(ctx context.Context, body string) error {
	if body == c.last {
		return nil
	}
	if c.run.StatusCommentID == 0 {
		cm, err := c.gh.CreateIssueComment(ctx, c.req.Owner, c.req.Name, c.req.statusOn(), body)
		if err != nil {
			return err
		}
		c.run.StatusCommentID = cm.ID
	} else if err := c.gh.EditIssueComment(ctx, c.req.Owner, c.req.Name, c.run.StatusCommentID, body); err != nil {
		return err
	}
	c.last = body
	return nil
}
