package handlers

import (
	"encoding/json"
	"errors"
	"strings"

	gogithub "github.com/google/go-github/v66/github"

	"github.com/bestofn/bestofn/explore"
	"github.com/bestofn/bestofn/store"
)

// JobRun is the kind of job that runs best-of-N for an issue.
const JobRun = store.JobKindRun

// runRequest is a run job's payload: what the webhook said, converted at the
// edge to the bot's own terms.
type runRequest struct {
	Owner         string `json:"owner"`
	Name          string `json:"name"`
	CloneURL      string `json:"clone_url"`
	DefaultBranch string `json:"default_branch"`
	Issue         int    `json:"issue"`
	Title         string `json:"title"`
	Body          string `json:"body"`
	IssueURL      string `json:"issue_url"`
	Sender        string `json:"sender"`
	// Label is the label that was added; the job checks it against the
	// repository's configured label before doing anything else. Empty for
	// runs started by a comment.
	Label string `json:"label,omitempty"`
	// Trigger is how the run was asked for: TriggerLabel, TriggerComment,
	// TriggerRetry or TriggerRevise.
	Trigger string `json:"trigger"`
	// Association is the sender's author_association on the comment.
	Association string `json:"association,omitempty"`
	// CommentID is the comment that gave the command, for reactions.
	CommentID int64 `json:"comment_id,omitempty"`
	// Attempts overrides the configured number of attempts when not zero.
	Attempts int `json:"attempts,omitempty"`
	// PR is the bot's pull request a retry or revise was asked on.
	PR int `json:"pr,omitempty"`
	// Revise is what the reviewer asked for.
	Revise string `json:"revise,omitempty"`
}

// Triggers of a run.
const (
	TriggerLabel   = "label"
	TriggerComment = "comment"
	TriggerRetry   = "retry"
	TriggerRevise  = "revise"
)

func (r runRequest) repo() string { return r.Owner + "/" + r.Name }

// statusOn is where the run's status comment goes: the pull request a retry
// or revise was asked on, else the issue.
func (r runRequest) statusOn() int {
	if r.PR != 0 {
		return r.PR
	}
	return r.Issue
}

// decideIssues handles the issues event
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issues).
// Only the labeled action is acted on; pull requests, senders of type Bot and
// deliveries without an installation are ignored. The label is compared
// with the repository's configured one by the job, which reads the
// configuration, so that the webhook answers without calling GitHub.
func decideIssues(body []byte) (decision, error) {
	var ev gogithub.IssuesEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return decision{}, err
	}
	if ev.GetAction() != "labeled" {
		return decision{reason: "issues action " + ev.GetAction()}, nil
	}
	if isBot(ev.GetSender()) {
		return decision{reason: "sender is a bot"}, nil
	}
	if ev.Issue == nil || ev.Repo == nil || ev.Label == nil {
		return decision{}, errors.New("issues.labeled without issue, repository or label")
	}
	if ev.Issue.IsPullRequest() {
		return decision{reason: "label on a pull request"}, nil
	}
	if ev.GetInstallation().GetID() == 0 {
		return decision{reason: "no installation in the payload (not a GitHub App delivery)"}, nil
	}
	req := runRequest{
		Owner:         ev.Repo.GetOwner().GetLogin(),
		Name:          ev.Repo.GetName(),
		CloneURL:      ev.Repo.GetCloneURL(),
		DefaultBranch: ev.Repo.GetDefaultBranch(),
		Issue:         ev.Issue.GetNumber(),
		Title:         ev.Issue.GetTitle(),
		Body:          ev.Issue.GetBody(),
		IssueURL:      ev.Issue.GetHTMLURL(),
		Sender:        ev.GetSender().GetLogin(),
		Label:         ev.Label.GetName(),
		Trigger:       TriggerLabel,
	}
	if req.Owner == "" || req.Name == "" || req.CloneURL == "" || req.Issue == 0 {
		return decision{}, errors.New("issues.labeled without repository owner, name, clone_url or issue number")
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return decision{}, err
	}
	job := &store.Job{Kind: JobRun, InstallationID: ev.GetInstallation().GetID(), Repo: req.repo(), Issue: req.Issue, Payload: payload}
	// The configured label is known only from the repository's file: only
	// the default label takes the issue's run lock at once; others are
	// checked by the job, which takes the lock then (see runIssue).
	return decision{job: job, exclusive: req.Label == explore.Defaults(nil).Label, busy: busyReply(job, req.Owner, req.Name, req.Issue, 0)}, nil
}

// isBot reports whether a sender is a bot: type Bot or a login ending in "[bot]".
func isBot(u *gogithub.User) bool {
	return u.GetType() == "Bot" || strings.HasSuffix(u.GetLogin(), "[bot]")
}
