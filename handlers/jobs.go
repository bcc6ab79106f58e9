package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/github"
	"github.com/bestofn/bestofn/store"
)

// likelyWriter are the author_association values of people who usually have
// write access. They decide only whether a trigger takes the issue's run
// lock at intake; permission itself is always asked of GitHub, because
// organisation members and collaborators can be read-only.
var likelyWriter = map[string]bool{"OWNER": true, "MEMBER": true, "COLLABORATOR": true}

// mayWrite reports whether login may start, revise, pick or cancel runs on
// the repository: the owner (author_association OWNER) may; anyone else only
// when the collaborator-permission API says write, maintain or admin. It
// returns the role it found.
func mayWrite(ctx context.Context, gh *github.Client, owner, name, login, association string) (bool, string, error) {
	if association == "OWNER" {
		return true, association, nil
	}
	role, err := gh.Permission(ctx, owner, name, login)
	if err != nil {
		return false, "", err
	}
	return writeRoles[role], role, nil
}

// react adds a reaction to a comment; a failure is logged, never fatal.
func react(ctx context.Context, log *slog.Logger, gh *github.Client, owner, name string, commentID int64, content string) {
	if commentID == 0 || content == "" {
		return
	}
	if err := gh.AddCommentReaction(ctx, owner, name, commentID, content); err != nil {
		log.Warn("add reaction", "content", content, "err", err)
	}
}

// jobClient decodes a job's payload into v and returns the client of the
// job's installation.
func (s *Server) jobClient(job *store.Job, v any) (*github.Client, error) {
	if err := decodeJob(job, v); err != nil {
		return nil, err
	}
	return s.opts.GitHub.Installation(job.InstallationID)
}

// decodeJob decodes a job's payload into v.
func decodeJob(job *store.Job, v any) error {
	if err := json.Unmarshal(job.Payload, v); err != nil {
		return fmt.Errorf("decode job payload: %w", err)
	}
	return nil
}

// runReply posts a reply job's comment and reaction. A busy reply names the
// active run: who started it and how long ago.
func (s *Server) runReply(ctx context.Context, log *slog.Logger, job *store.Job) (store.JobStatus, error) {
	var r replyRequest
	gh, err := s.jobClient(job, &r)
	if err != nil {
		return store.JobFailed, err
	}
	body := r.Body
	if r.Busy {
		body = "A run is already in progress on this issue"
		if active, err := s.opts.Store.ActiveJob(ctx, job.Repo, r.Issue); err == nil {
			var req runRequest
			_ = json.Unmarshal(active.Payload, &req)
			body += fmt.Sprintf(" (started by @%s, %s ago)", req.Sender, humanSince(active.CreatedAt))
		}
		body += "; `/bestofn cancel` stops it."
	}
	react(ctx, log, gh, r.Owner, r.Name, r.CommentID, r.Reaction)
	if _, err := gh.CreateIssueComment(ctx, r.Owner, r.Name, r.Number, marker(0, "")+body+footer(0)); err != nil {
		return store.JobFailed, err
	}
	return store.JobDone, nil
}

func humanSince(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < 2*time.Minute:
		return "1 minute"
	case d < time.Hour:
		return fmt.Sprintf("%d minutes", int(d.Minutes()))
	}
	return d.Round(time.Minute).String()
}

// runCommand answers cancel, status and pick.
func (s *Server) runCommand(ctx context.Context, log *slog.Logger, job *store.Job) (store.JobStatus, error) {
	var c commandRequest
	gh, err := s.jobClient(job, &c)
	if err != nil {
		return store.JobFailed, err
	}
	say := func(reaction, text string) (store.JobStatus, error) {
		react(ctx, log, gh, c.Owner, c.Name, c.CommentID, reaction)
		if _, err := gh.CreateIssueComment(ctx, c.Owner, c.Name, c.Number, marker(0, "")+text+footer(0)); err != nil {
			return store.JobFailed, err
		}
		return store.JobDone, nil
	}
	if c.Verb == VerbStatus {
		return say("eyes", s.statusText(ctx, job.Repo, c.Issue))
	}
	ok, role, err := mayWrite(ctx, gh, c.Owner, c.Name, c.Sender, c.Association)
	if err != nil {
		return store.JobFailed, err
	}
	if !ok {
		return say("-1", fmt.Sprintf("@%s `/bestofn %s` needs write access to this repository (you have %s).", c.Sender, c.Verb, role))
	}
	switch c.Verb {
	case VerbCancel:
		j, err := s.opts.Store.RequestCancel(ctx, job.Repo, c.Issue)
		if errors.Is(err, store.ErrNotFound) {
			return say("-1", "There is no run in progress here to cancel.")
		}
		if err != nil {
			return store.JobFailed, err
		}
		s.cancelLocal(j.ID)
		return say("eyes", fmt.Sprintf("Cancelling the run for #%d, as @%s asked: its agents are stopped and its sandboxes removed.", c.Issue, c.Sender))
	case VerbPick:
		return s.pick(ctx, log, gh, c, say)
	}
	return store.JobFailed, fmt.Errorf("unknown command %q", c.Verb)
}

// statusText says what the bot is doing on an issue: the active run, or how
// the last one ended.
func (s *Server) statusText(ctx context.Context, repo string, issue int) string {
	if active, err := s.opts.Store.ActiveJob(ctx, repo, issue); err == nil {
		var req runRequest
		_ = json.Unmarshal(active.Payload, &req)
		text := fmt.Sprintf("A run is in progress for #%d (started by @%s, %s ago", issue, req.Sender, humanSince(active.CreatedAt))
		if runs, _ := s.opts.Store.Runs(ctx, store.RunFilter{JobID: active.ID, Limit: 1}); len(runs) == 1 {
			text += fmt.Sprintf("; run %d is %s", runs[0].ID, runs[0].Status)
		}
		return text + "). `/bestofn cancel` stops it."
	}
	runs, err := s.opts.Store.Runs(ctx, store.RunFilter{Repo: repo, Issue: issue, Limit: 1})
	if err != nil || len(runs) == 0 {
		return fmt.Sprintf("No bestofn run for #%d yet. `/bestofn` on the issue starts one.", issue)
	}
	r := runs[0]
	text := fmt.Sprintf("No run in progress for #%d. The last one (run %d) ended %s", issue, r.ID, r.Status)
	switch {
	case r.PRNumber != 0 && r.Winner != 0:
		text += fmt.Sprintf(": attempt %d is on #%d", r.Winner, r.PRNumber)
	case r.Status == store.RunDone:
		text += ": no attempt passed"
	case r.Error != "":
		text += ": " + r.Error
	}
	if url := s.runURL(r.ID); url != "" {
		text += fmt.Sprintf(" ([run page](%s))", url)
	}
	return text + "."
}

// pick puts attempt k's stored patch of the pull request's latest run on the
// branch, when it passed; otherwise it refuses and says why.
func (s *Server) pick(ctx context.Context, log *slog.Logger, gh *github.Client, c commandRequest,
	say func(reaction, text string) (store.JobStatus, error)) (store.JobStatus, error) {
	run, err := s.opts.Store.RunForPR(ctx, c.Owner+"/"+c.Name, c.PR)
	if err != nil {
		return store.JobFailed, err
	}
	attempts, err := s.opts.Store.Attempts(ctx, run.ID)
	if err != nil {
		return store.JobFailed, err
	}
	var a *store.Attempt
	for _, x := range attempts {
		if x.Number == c.Pick {
			a = x
		}
	}
	switch {
	case a == nil:
		return say("-1", fmt.Sprintf("Run %d has no attempt %d (it had %d).", run.ID, c.Pick, len(attempts)))
	case a.OutcomeKind != string(explore.OutcomePass):
		return say("-1", fmt.Sprintf("Attempt %d of run %d did not pass (%s), so it cannot go on the branch.", a.Number, run.ID, a.Outcome))
	case a.Number == run.Winner:
		return say("eyes", fmt.Sprintf("Attempt %d is already on the branch.", a.Number))
	}
	react(ctx, log, gh, c.Owner, c.Name, c.CommentID, "eyes")
	dir, err := os.MkdirTemp(filepath.Join(s.opts.DataDir), "pick-")
	if err != nil {
		return store.JobFailed, err
	}
	defer os.RemoveAll(dir)
	token, err := gh.Token(ctx)
	if err != nil {
		return store.JobFailed, err
	}
	repoDir := filepath.Join(dir, "repo")
	if _, err := github.Clone(ctx, c.CloneURL, token, repoDir); err != nil {
		return store.JobFailed, err
	}
	files, err := explore.PatchFiles(ctx, repoDir, run.BaseCommit, a.Patch)
	if err != nil {
		return store.JobFailed, err
	}
	changes := make([]github.FileChange, 0, len(files))
	for _, f := range files {
		changes = append(changes, github.FileChange{Path: f.Path, Mode: f.Mode, Content: f.Content, Delete: f.Deleted})
	}
	msg := fmt.Sprintf("Fix #%d: attempt %d of run %d, picked by @%s", run.Issue, a.Number, run.ID, c.Sender)
	sha, err := gh.CommitFiles(ctx, c.Owner, c.Name, github.CommitRequest{BaseCommit: run.BaseCommit, Message: msg, Changes: changes})
	if err != nil {
		return store.JobFailed, err
	}
	if err := gh.SetBranch(ctx, c.Owner, c.Name, branchFor(run.Issue), sha); err != nil {
		return store.JobFailed, err
	}
	run.Winner = a.Number
	if err := s.opts.Store.UpdateRun(ctx, run); err != nil {
		return store.JobFailed, err
	}
	if _, err := gh.CreateIssueComment(ctx, c.Owner, c.Name, c.Number, marker(run.ID, "")+
		fmt.Sprintf("Attempt %d (%s, +%d −%d in %d files) is now on `%s`, as @%s picked.", a.Number, hintText(a.Hint),
			a.LinesAdded, a.LinesDeleted, a.FilesChanged, branchFor(run.Issue), c.Sender)+footer(run.ID)); err != nil {
		return store.JobFailed, err
	}
	return store.JobDone, nil
}

// branchFor is the bot's branch for an issue.
func branchFor(issue int) string { return "bestofn/issue-" + strconv.Itoa(issue) }

// runPRClosed records how the bot's pull request ended.
func (s *Server) runPRClosed(ctx context.Context, log *slog.Logger, job *store.Job) (store.JobStatus, error) {
	var p prClosed
	if err := decodeJob(job, &p); err != nil {
		return store.JobFailed, err
	}
	outcome := "closed"
	if p.Merged {
		outcome = "merged"
	}
	n, err := s.opts.Store.RecordPROutcome(ctx, p.Repo, p.PR, outcome)
	if err != nil {
		return store.JobFailed, err
	}
	if n == 0 {
		return store.JobIgnored, nil
	}
	log.Info("pull request closed", "pr", p.PR, "outcome", outcome, "runs", n)
	return store.JobDone, nil
}

// runInstallation records an installation event; a removal drops the
// installation's queued jobs with a log line.
func (s *Server) runInstallation(ctx context.Context, log *slog.Logger, job *store.Job) (store.JobStatus, error) {
	var c installationChange
	if err := decodeJob(job, &c); err != nil {
		return store.JobFailed, err
	}
	dropped, err := s.opts.Store.RecordInstallation(ctx, c.ID, c.Account, c.Active)
	if err != nil {
		return store.JobFailed, err
	}
	log.Info("installation recorded", "action", c.Action, "account", c.Account, "active", c.Active)
	if dropped > 0 {
		log.Warn("installation removed: its queued jobs were dropped", "github_installation_id", c.ID, "jobs", dropped)
	}
	return store.JobDone, nil
}
